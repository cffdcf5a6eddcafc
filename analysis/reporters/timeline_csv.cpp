#include <fmt/ostream.h>

#include <cmath>
#include <ostream>

#include "analysis/reporters/reporters.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {

void write_timeline_csv(std::ostream& out, const RunContext& run, const Timeline& timeline) {
  out << "gpu,stream,kind,name,micro_batch,stage,start_s,end_s,bytes,peer,algorithm\n";
  for (const auto& r : timeline.records) {
    const auto& task = run.graph[r.task];
    const auto* choice = timeline.collective_choice(r.task);
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{}\n", r.gpu, to_string(r.stream), to_string(task.kind),
               workloads::task_label(run.graph, r.task), task.micro_batch, task.stage,
               units::format_machine(r.start_s), units::format_machine(r.end_s),
               units::format_machine(std::round(task.bytes)), task.peer,
               choice ? to_string(choice->algorithm) : "");
  }
}

}  // namespace trainsim::analysis
