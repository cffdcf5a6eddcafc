#include <fmt/compile.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <ostream>
#include <string_view>
#include <vector>

#include "analysis/reporters/image_rows.hpp"
#include "analysis/reporters/machine_numbers.hpp"
#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {
namespace {

void append_int(fmt::memory_buffer& out, long long value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.data() + text.size());
}

// What a row takes from its task, formatted once per task: its
// "kind,name,micro_batch,stage," and its "bytes,".
struct TaskFields {
  fmt::memory_buffer head, bytes;
};

void format_task_fields(TaskFields& fields, MachineNumberTexts& numbers, const RunContext& run,
                        workloads::TaskId id) {
  const auto& task = run.graph[id];
  fields.head.clear();
  fmt::format_to(std::back_inserter(fields.head), FMT_COMPILE("{},{},{},{},"), to_string(task.kind),
                 workloads::task_label(run.graph, id), task.micro_batch, task.stage);
  fields.bytes.clear();
  numbers.append(fields.bytes, std::round(task.bytes));
  fields.bytes.push_back(',');
}

// A row's fields from its stream to its bytes, with the commas around them:
// ",stream,kind,name,micro_batch,stage,start_s,end_s,bytes,", `task` being
// r.task's fields.
void append_shared_fields(fmt::memory_buffer& out, MachineNumberTexts& numbers, const TaskFields& task,
                          const TaskRecord& r) {
  out.push_back(',');
  const std::string_view stream = to_string(r.stream);
  out.append(stream.data(), stream.data() + stream.size());
  out.push_back(',');
  out.append(task.head.data(), task.head.data() + task.head.size());
  numbers.append(out, r.start_s);
  out.push_back(',');
  numbers.append(out, r.end_s);
  out.push_back(',');
  out.append(task.bytes.data(), task.bytes.data() + task.bytes.size());
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
  TaskFields task_fields, own_fields;
  MachineNumberTexts numbers;
  // A folded timeline class by class: the images of a record share its
  // stream, times, bytes, name and collective choice (the expansion gives
  // every image its representative's, sim/replay/fold_expansion.cpp), which
  // are formatted once; each image writes its GPU and peer.
  // A collective's members follow one another with the same task, stream
  // and times (the replay records them together): their fields, and the
  // collective's algorithm, are formatted once for the run of them.
  // An image's task, hence whether it writes its record's row fields
  // (same_row_fields, checked, not assumed) and its peer, depends on the
  // record's task and k only: found once per run of records of one task,
  // not once per record (scale-16k: 32,896 runs for 536,576 records).
  struct ImageTask {
    bool alike;
    int peer;
  };
  std::vector<ImageTask> image_tasks;
  const auto& records = timeline.records;
  const TaskRecord* previous = nullptr;
  std::string_view algorithm;
  for (const TaskRecord& first : records.recorded()) {
    const int n = records.images_of(first);
    const bool new_task = previous == nullptr || previous->task != first.task;
    if (new_task) {
      // Only collective tasks have a choice (Timeline::collectives).
      const auto* choice = run.graph[first.task].kind == workloads::TaskKind::collective
                               ? timeline.collective_choice(first.task)
                               : nullptr;
      algorithm = choice ? to_string(choice->algorithm) : std::string_view();
      format_task_fields(task_fields, numbers, run, first.task);
      image_tasks.clear();
      for (int k = 0; k < n; ++k) {
        const workloads::TaskId image = records.image(first, k).task;
        image_tasks.push_back(
            {k == 0 || same_row_fields(run.graph, first.task, image), run.graph[image].peer});
      }
    }
    if (new_task || !same_shared_fields(*previous, first)) {
      shared.clear();
      append_shared_fields(shared, numbers, task_fields, first);
    }
    previous = &first;
    for (int k = 0; k < n; ++k) {
      const TaskRecord r = records.image(first, k);
      append_int(buffer, r.gpu);
      if (image_tasks[static_cast<std::size_t>(k)].alike) {
        buffer.append(shared.data(), shared.data() + shared.size());
      } else {
        format_task_fields(own_fields, numbers, run, r.task);
        own.clear();
        append_shared_fields(own, numbers, own_fields, r);
        buffer.append(own.data(), own.data() + own.size());
      }
      append_int(buffer, image_tasks[static_cast<std::size_t>(k)].peer);
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
