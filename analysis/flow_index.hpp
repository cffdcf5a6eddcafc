#pragma once
// Flow numbers (indices into Timeline::flows) grouped by a key, a link or a
// task, in flow order within a key: one compressed index (a 32-bit flow
// number per entry, plus an offset per key) built by a counting sort, instead
// of a vector per key. At 16,384+ GPUs the timeline holds tens of millions of
// flows, each crossing 2-6 links, and a vector of intervals per link (48 B per
// crossing) was the largest allocation of a run.
#include <cstdint>
#include <span>
#include <vector>

#include "analysis/timeline.hpp"

namespace trainsim::analysis {

class FlowIndex {
 public:
  // Each link's flows: every link each flow crossed (Timeline::links order).
  static FlowIndex by_link(const Timeline& timeline);
  // Each task's flows (by TaskId; tasks past the last one with a flow have none).
  static FlowIndex by_task(const Timeline& timeline);
  // The same over a folded timeline's recorded flows (Timeline::flows.recorded()
  // numbers; analysis/fold_classes.hpp): each recorded task's flows, and each
  // link orbit's, filed under `representative[link]` for every link crossed.
  static FlowIndex by_recorded_task(const Timeline& timeline);
  static FlowIndex by_recorded_link(const Timeline& timeline,
                                    const std::vector<std::uint32_t>& representative);
  // Only the flows of `tasks` (distinct ids, in increasing order), key i
  // holding tasks[i]'s: of the full list, or of the recorded flows when
  // `recorded`. For an analysis that asks about a few hundred tasks of
  // millions (the critical path's): one pass that files the few flows
  // asked for, not an offset per task of the graph.
  static FlowIndex of_tasks(const Timeline& timeline, bool recorded,
                            const std::vector<workloads::TaskId>& tasks);

  std::size_t keys() const { return begin_.size() - 1; }
  std::span<const std::uint32_t> of(std::size_t key) const {
    if (key >= keys())
      return {};
    return {flows_.data() + begin_[key], flows_.data() + begin_[key + 1]};
  }
  // The same, for a caller that reorders a key's flows in place.
  std::span<std::uint32_t> of(std::size_t key) {
    if (key >= keys())
      return {};
    return {flows_.data() + begin_[key], flows_.data() + begin_[key + 1]};
  }

 private:
  // `for_each_pair(emit)` calls emit(key, flow) for every entry, in flow
  // order; it is called twice (count, then fill).
  template <class ForEachPair>
  FlowIndex(const Timeline& timeline, std::size_t keys, ForEachPair for_each_pair);

  std::vector<std::size_t> begin_;  // per key, and one past the last
  std::vector<std::uint32_t> flows_;
};

}  // namespace trainsim::analysis
