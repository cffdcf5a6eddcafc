#include <fmt/ostream.h>

#include <ostream>

#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {

void write_timeline_csv(std::ostream& out, const RunContext& run, const Timeline& timeline) {
  out << "gpu,stream,kind,name,micro_batch,stage,start_s,end_s,bytes,peer,algorithm\n";
  for (const auto& r : timeline.records) {
    const auto& task = run.graph[r.task];
    const auto* choice = timeline.collective_choice(r.task);
    fmt::print(out, "{},{},{},{},{},{},{:.9f},{:.9f},{:.0f},{},{}\n", r.gpu, to_string(r.stream),
               to_string(task.kind), workloads::task_label(run.graph, r.task), task.micro_batch, task.stage,
               r.start_s, r.end_s, task.bytes, task.peer, choice ? to_string(choice->algorithm) : "");
  }
}

}  // namespace trainsim::analysis
