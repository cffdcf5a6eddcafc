#include <fmt/compile.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <ostream>

#include "analysis/reporters/image_rows.hpp"
#include "analysis/reporters/machine_numbers.hpp"
#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {
namespace {

void append_int(fmt::memory_buffer& out, long long value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.data() + text.size());
}

// A row's fields from its stream to its bytes, with the commas around them:
// ",stream,kind,name,micro_batch,stage,start_s,end_s,bytes,".
void append_shared_fields(fmt::memory_buffer& out, MachineNumberTexts& numbers, const RunContext& run,
                          const TaskRecord& r) {
  const auto& task = run.graph[r.task];
  fmt::format_to(std::back_inserter(out), FMT_COMPILE(",{},{},{},{},{},"), to_string(r.stream),
                 to_string(task.kind), workloads::task_label(run.graph, r.task), task.micro_batch,
                 task.stage);
  numbers.append(out, r.start_s);
  out.push_back(',');
  numbers.append(out, r.end_s);
  out.push_back(',');
  numbers.append(out, std::round(task.bytes));
  out.push_back(',');
}

// Whether two records' shared fields (append_shared_fields) are the same
// text: the same task, stream and times.
bool same_shared_fields(const TaskRecord& a, const TaskRecord& b) {
  return a.task == b.task && a.stream == b.stream &&
         std::bit_cast<std::uint64_t>(a.start_s) == std::bit_cast<std::uint64_t>(b.start_s) &&
         std::bit_cast<std::uint64_t>(a.end_s) == std::bit_cast<std::uint64_t>(b.end_s);
}

}  // namespace

void write_timeline_csv(std::ostream& out, const RunContext& run, const Timeline& timeline) {
  out << "gpu,stream,kind,name,micro_batch,stage,start_s,end_s,bytes,peer,algorithm\n";
  // Rows go through one buffer, written out a megabyte at a time.
  constexpr std::size_t kFlushBytes = 1 << 20;
  fmt::memory_buffer buffer, shared, own;
  MachineNumberTexts numbers;
  // A folded timeline class by class: the images of a record share its
  // stream, times, bytes, name and collective choice (the expansion gives
  // every image its representative's, sim/replay/fold_expansion.cpp), which
  // are formatted once; each image writes its GPU and peer.
  // A collective's members follow one another with the same task, stream
  // and times (the replay records them together): their fields, and the
  // collective's algorithm, are formatted once for the run of them.
  const auto& records = timeline.records;
  const TaskRecord* previous = nullptr;
  std::string_view algorithm;
  for (const TaskRecord& first : records.recorded()) {
    const int n = records.images_of(first);
    if (previous == nullptr || previous->task != first.task) {
      // Only collective tasks have a choice (Timeline::collectives).
      const auto* choice = run.graph[first.task].kind == workloads::TaskKind::collective
                               ? timeline.collective_choice(first.task)
                               : nullptr;
      algorithm = choice ? to_string(choice->algorithm) : std::string_view();
    }
    if (previous == nullptr || !same_shared_fields(*previous, first)) {
      shared.clear();
      append_shared_fields(shared, numbers, run, first);
    }
    previous = &first;
    for (int k = 0; k < n; ++k) {
      const TaskRecord r = records.image(first, k);
      append_int(buffer, r.gpu);
      if (k == 0 || same_row_fields(run.graph, first.task, r.task)) {
        buffer.append(shared.data(), shared.data() + shared.size());
      } else {
        own.clear();
        append_shared_fields(own, numbers, run, r);
        buffer.append(own.data(), own.data() + own.size());
      }
      append_int(buffer, run.graph[r.task].peer);
      buffer.push_back(',');
      buffer.append(algorithm.data(), algorithm.data() + algorithm.size());
      buffer.push_back('\n');
      if (buffer.size() >= kFlushBytes) {
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        buffer.clear();
      }
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

}  // namespace trainsim::analysis
