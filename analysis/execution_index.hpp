#pragma once
// When each task ran, and what released it: the index every causal report
// (bubble causes, critical path, straggler re-timing) walks.
//
// A task starts when its last dependency finishes and, for a compute task,
// when its GPU's compute stream is free. Its *releaser* is whichever of those
// finished last: the latest-ending graph predecessor or the compute task that
// ran just before it on the same GPU. Following releasers backwards from the
// end of the iteration gives the chain of work that set the iteration time.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

class ExecutionIndex {
 public:
  static constexpr workloads::TaskId kNone = std::numeric_limits<workloads::TaskId>::max();

  ExecutionIndex(const workloads::TaskGraph& graph, const Timeline& timeline);

  bool ran(workloads::TaskId task) const { return (flags_[task] & kRan) != 0; }
  double start_s(workloads::TaskId task) const { return times_[task].start_s; }
  double end_s(workloads::TaskId task) const { return times_[task].end_s; }
  // Compute tasks of `gpu` in execution order.
  std::span<const std::uint32_t> compute_order(int gpu) const {
    const auto g = static_cast<std::size_t>(gpu);
    return {compute_order_.data() + order_begin_[g], compute_order_.data() + order_begin_[g + 1]};
  }
  // The compute task that ran just before `task` on its GPU (kNone if none).
  workloads::TaskId stream_predecessor(workloads::TaskId task) const { return widen(stream_pred_[task]); }
  // What finished last before `task` could start (kNone for a first task).
  workloads::TaskId releaser(workloads::TaskId task) const { return widen(releaser_[task]); }
  // Whether another candidate finished at the same instant as `task`'s
  // releaser (the choice between them is by task id, which a fold's rotation
  // need not preserve: analysis/bubbles.cpp checks such tasks' images).
  bool tied(workloads::TaskId task) const { return (flags_[task] & kTied) != 0; }
  // The task that finished last in the iteration (ties: the last recorded).
  workloads::TaskId last_task() const { return last_task_; }
  // Tasks in an order where every releaser, graph predecessor and stream
  // predecessor of a task comes before it.
  const std::vector<std::uint32_t>& topological_order() const { return topo_; }

 private:
  // Task ids are held in 32 bits (the constructor refuses a larger graph):
  // these arrays span every task of the graph, the whole machine's under the
  // fold, and are held while the causal reports run (docs/performance.md,
  // "Where the folded run's memory goes").
  static constexpr std::uint32_t kNone32 = std::numeric_limits<std::uint32_t>::max();
  static workloads::TaskId widen(std::uint32_t task) { return task == kNone32 ? kNone : task; }

  // ran and tied, a byte per task (a bit vector's reads and writes cost
  // several instructions each, and every reader asks per task and per edge).
  static constexpr std::uint8_t kRan = 1, kTied = 2;
  std::vector<std::uint8_t> flags_;
  // A task's start and end side by side: the readers (the releasers' pass,
  // the gap walks, the re-timing) and the records' pass touch both of a
  // task at once, in no order of task id, so one cache line rather than two.
  struct Times {
    double start_s = 0;
    double end_s = 0;
  };
  std::vector<Times> times_;
  // The compute orders one after the other, GPU g's from order_begin_[g] to
  // order_begin_[g + 1] (one array, not a vector per GPU).
  std::vector<std::uint32_t> order_begin_, compute_order_;
  std::vector<std::uint32_t> stream_pred_, releaser_, topo_;
  workloads::TaskId last_task_ = kNone;
};

}  // namespace trainsim::analysis
