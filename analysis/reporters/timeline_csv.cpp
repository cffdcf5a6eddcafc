#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/images_alike.hpp"
#include "analysis/record_prefetch.hpp"
#include "analysis/reporters/machine_numbers.hpp"
#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {
namespace {

void append_int(fmt::memory_buffer& out, long long value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.data() + text.size());
}

// What a row takes from its task: its "kind,name,micro_batch,stage," and
// its "bytes,".
struct TaskFields {
  std::string head, bytes;
};

void format_task_fields(TaskFields& fields, MachineNumberTexts& numbers, const RunContext& run,
                        workloads::TaskId id) {
  const auto& task = run.graph[id];
  fmt::memory_buffer text;
  fmt::format_to(std::back_inserter(text), FMT_COMPILE("{},{},{},{},"), to_string(task.kind),
                 workloads::task_label(run.graph, id), task.micro_batch, task.stage);
  fields.head.assign(text.data(), text.size());
  text.clear();
  numbers.append(text, std::round(task.bytes));
  text.push_back(',');
  fields.bytes.assign(text.data(), text.size());
}

// Tasks' fields, formatted once per distinct text: a run's tasks write few
// (scale-16k: 1,312 among the 290,944 runs of one task's records), and each
// formatting made the task's label as a string of its own. Kept by a hash
// of what same_row_fields compares, one task a slot; a task whose fields are
// not its slot's (same_row_fields, checked each time) is formatted and
// takes the slot.
class TaskFieldsCache {
 public:
  const TaskFields& of(MachineNumberTexts& numbers, const RunContext& run, workloads::TaskId id) {
    const workloads::Task& t = run.graph[id];
    std::uint64_t h = static_cast<std::uint64_t>(t.kind) | static_cast<std::uint64_t>(t.comm) << 8 |
                      static_cast<std::uint64_t>(t.op) << 16 | static_cast<std::uint64_t>(t.transfer) << 24 |
                      static_cast<std::uint64_t>(t.attention) << 32;
    h = (h ^ static_cast<std::uint32_t>(t.micro_batch)) * 0x9e3779b97f4a7c15ULL;
    h = (h ^ (static_cast<std::uint64_t>(static_cast<std::uint16_t>(t.chunk)) << 16 |
              static_cast<std::uint16_t>(t.layer))) *
        0x9e3779b97f4a7c15ULL;
    h = (h ^ static_cast<std::uint32_t>(t.stage) ^ std::bit_cast<std::uint64_t>(t.bytes)) *
        0x9e3779b97f4a7c15ULL;
    Slot& slot = slots_[h >> (64 - kSlotBits)];
    if (!slot.used || !(slot.task == id || same_row_fields(run.graph, slot.task, id))) {
      format_task_fields(slot.fields, numbers, run, id);
      slot.used = true;
      slot.task = id;
    }
    return slot.fields;
  }

 private:
  static constexpr int kSlotBits = 12;
  struct Slot {
    bool used = false;
    workloads::TaskId task = 0;
    TaskFields fields;
  };
  std::vector<Slot> slots_ = std::vector<Slot>(std::size_t{1} << kSlotBits);
};

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
  fmt::memory_buffer buffer, tails;
  MachineNumberTexts numbers;
  TaskFieldsCache task_fields;
  const TaskFields* fields = nullptr;  // the record's task's
  // A folded timeline class by class: the images of a record share its
  // stream, times, bytes, name and collective choice (the expansion gives
  // every image its representative's, sim/replay/fold_expansion.cpp), which
  // are formatted once; each image writes its GPU and peer.
  // A collective's members follow one another with the same task, stream
  // and times (the replay records them together): their fields, and the
  // collective's algorithm, are formatted once for the run of them.
  // A row is its GPU and a tail (",stream,...,bytes,peer,algorithm\n") that
  // depends on the record's fields and k only: the record's images' tails
  // are made when those change, and each row copies its GPU's digits and
  // its tail. Whether an image's task writes its record's row fields
  // (same_row_fields), and its peer, are known for a record whose images
  // the run found alike (Timeline::images_alike: image k's peer is
  // image_peer of the record's), else read from each image's task.
  struct Span {
    std::size_t from, length;
  };
  std::vector<Span> tail_of;  // image k's tail in `tails`
  std::size_t longest_tail = 0;
  // Every GPU's digits, made once (format_int per row was a fifth of the rows' work).
  struct GpuDigits {
    char text[16];  // an int's digits take at most 11
    std::size_t size;
  };
  std::vector<GpuDigits> gpu_digits(static_cast<std::size_t>(std::max(run.graph.gpu_count, 0)));
  for (std::size_t g = 0; g < gpu_digits.size(); ++g) {
    const fmt::format_int text(static_cast<long long>(g));
    std::memcpy(gpu_digits[g].text, text.data(), text.size());
    gpu_digits[g].size = text.size();
  }
  const auto& records = timeline.records;
  const TaskRecord* previous = nullptr;
  std::string_view algorithm;
  const RecordPrefetch prefetch(run.graph, records);
  for (std::size_t i = 0; i < records.recorded().size(); ++i) {
    prefetch.ahead_of(i);
    const TaskRecord& first = records.recorded()[i];
    const int n = records.images_of(first);
    const bool new_task = previous == nullptr || previous->task != first.task;
    if (new_task) {
      // Only collective tasks have a choice (Timeline::collectives).
      const auto* choice = run.graph[first.task].kind == workloads::TaskKind::collective
                               ? timeline.collective_choice(first.task)
                               : nullptr;
      algorithm = choice ? to_string(choice->algorithm) : std::string_view();
      fields = &task_fields.of(numbers, run, first.task);
    }
    // The tails depend on the task (its images, their fields and peers, the
    // algorithm), the stream and the times: same_shared_fields.
    if (new_task || !same_shared_fields(*previous, first)) {
      tails.clear();
      tail_of.clear();
      const bool known_alike = n > 1 && timeline.images_alike(i);
      int first_peer = 0;
      std::size_t shared_length = 0;  // image 0's ",stream,...,bytes,"
      for (int k = 0; k < n; ++k) {
        TaskRecord r = first;
        bool alike = true;
        int peer = 0;
        if (k == 0) {
          peer = run.graph[first.task].peer;
        } else if (known_alike) {
          peer = image_peer(first_peer, k, run.graph.gpu_count, *records.fold_images());
        } else {
          r = records.image(first, k);
          alike = same_row_fields(run.graph, first.task, r.task);
          peer = run.graph[r.task].peer;
        }
        if (k == 0)
          first_peer = peer;
        else if (alike && peer == first_peer) {  // image 0's tail (not a send's: its peer moves)
          tail_of.push_back(tail_of.front());
          continue;
        }
        const std::size_t from = tails.size();
        if (k == 0) {
          append_shared_fields(tails, numbers, *fields, first);
          shared_length = tails.size();
        } else if (alike) {  // image 0's fields, at the start of `tails`
          tails.resize(from + shared_length);
          std::memcpy(tails.data() + from, tails.data(), shared_length);
        } else {
          // Its own fields; the record's may leave their slot meanwhile.
          const TaskFields own = task_fields.of(numbers, run, r.task);
          append_shared_fields(tails, numbers, own, r);
          fields = &task_fields.of(numbers, run, first.task);
        }
        append_int(tails, peer);
        tails.push_back(',');
        tails.append(algorithm.data(), algorithm.data() + algorithm.size());
        tails.push_back('\n');
        tail_of.push_back({from, tails.size() - from});
        longest_tail = std::max(longest_tail, tails.size() - from);
      }
    }
    previous = &first;
    // Room for the record's rows is made once; each row then copies its
    // GPU's digits (16 bytes, of which the digits count) and its tail.
    const std::size_t at = buffer.size();
    buffer.resize(at + static_cast<std::size_t>(n) * (sizeof(GpuDigits::text) + longest_tail));
    char* row = buffer.data() + at;
    for (int k = 0; k < n; ++k) {
      const int gpu = records.image(first, k).gpu;
      if (gpu >= 0 && static_cast<std::size_t>(gpu) < gpu_digits.size()) {
        const GpuDigits& digits = gpu_digits[static_cast<std::size_t>(gpu)];
        std::memcpy(row, digits.text, sizeof digits.text);
        row += digits.size;
      } else {
        const fmt::format_int text(gpu);
        std::memcpy(row, text.data(), text.size());
        row += text.size();
      }
      const auto [from, length] = tail_of[static_cast<std::size_t>(k)];
      std::memcpy(row, tails.data() + from, length);
      row += length;
    }
    buffer.resize(static_cast<std::size_t>(row - buffer.data()));
    if (buffer.size() >= kFlushBytes) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

}  // namespace trainsim::analysis
