#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <ostream>

#include "analysis/reporters/reporters.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

// units::format_machine, appended to `out` without a string of its own
// (timeline.csv writes three numbers on each of millions of rows).
void append_machine_number(fmt::memory_buffer& out, double value) {
  if (std::isnan(value) || std::isinf(value)) {
    const auto text = units::format_machine(value);
    out.append(text.data(), text.data() + text.size());
  } else if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<long long>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

}  // namespace

void write_timeline_csv(std::ostream& out, const RunContext& run, const Timeline& timeline) {
  out << "gpu,stream,kind,name,micro_batch,stage,start_s,end_s,bytes,peer,algorithm\n";
  // Rows go through one buffer, written out a megabyte at a time.
  constexpr std::size_t kFlushBytes = 1 << 20;
  fmt::memory_buffer buffer;
  const auto it = std::back_inserter(buffer);
  for (const auto& r : timeline.records) {
    const auto& task = run.graph[r.task];
    const auto* choice = timeline.collective_choice(r.task);
    fmt::format_to(it, "{},{},{},{},{},{},", r.gpu, to_string(r.stream), to_string(task.kind),
                   workloads::task_label(run.graph, r.task), task.micro_batch, task.stage);
    append_machine_number(buffer, r.start_s);
    buffer.push_back(',');
    append_machine_number(buffer, r.end_s);
    buffer.push_back(',');
    append_machine_number(buffer, std::round(task.bytes));
    fmt::format_to(it, ",{},{}\n", task.peer, choice ? to_string(choice->algorithm) : "");
    if (buffer.size() >= kFlushBytes) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

}  // namespace trainsim::analysis
