#pragma once
// Loops over a timeline's recorded records that read each record's task
// from the graph, and whether it is its own image (images_of), read them at
// random: records are in completion order, the graph in build order (on
// scale-16k, 290,944 records over 1.16M tasks of 96 bytes). Each read was a
// cache miss the loop waited for; asked for some records ahead, they arrive
// while the loop works on the records before.
#include <cstddef>
#include <vector>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

class RecordPrefetch {
 public:
  RecordPrefetch(const workloads::TaskGraph& graph, const TaskRecords& records)
      : graph_(graph), recorded_(records.recorded()), images_(records.fold_images()) {}

  // Call before reading recorded record i: asks for record i + kAhead's
  // task (both cache lines it may span) and position among its images.
  // Always inlined: GCC 12 finds a function of prefetches alone free of
  // side effects and drops its calls, unless it is inlined first.
  [[gnu::always_inline]] void ahead_of(std::size_t i) const {
    if (i + kAhead >= recorded_.size())
      return;
    const workloads::TaskId task = recorded_[i + kAhead].task;
    const auto* bytes = reinterpret_cast<const char*>(&graph_[task]);
    __builtin_prefetch(bytes);
    __builtin_prefetch(bytes + sizeof(workloads::Task) - 1);
    if (images_ != nullptr)
      images_->tasks.prefetch(task);
  }

 private:
  // Far enough ahead for the misses to arrive while the loop works on the
  // records between, near enough for the lines to be cached still.
  static constexpr std::size_t kAhead = 32;
  const workloads::TaskGraph& graph_;
  const std::vector<TaskRecord>& recorded_;
  const FoldImages* images_;
};

}  // namespace trainsim::analysis
