#pragma once
// Busy time as sorted, disjoint intervals: what "utilization" and "overlap"
// are computed from.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace trainsim::analysis {

using Interval = std::pair<double, double>;

// Interval lists per GPU, GPUs with equal lists sharing one (on a folded
// run the data-parallel replicas of one place run the same intervals: held
// once, not copied per GPU).
struct SharedIntervalLists {
  std::vector<std::vector<Interval>> lists;
  std::vector<std::uint32_t> list_of;  // per GPU, into `lists`

  std::size_t size() const { return list_of.size(); }
  const std::vector<Interval>& of(std::size_t gpu) const { return lists[list_of[gpu]]; }
};

// Sorts and merges overlapping or touching intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
// Total length of merged intervals.
double total_length(const std::vector<Interval>& merged);
// Length of the intersection of two merged interval lists.
double overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// One pass over the sorted start (+1) and end (-1) events of intervals with
// end >= start (ends before starts at equal times, as std::sort orders the
// pairs): the union's length, equal bit for bit to
// total_length(merge_intervals(the intervals)) (the same merged intervals,
// summed in the same order: zero-length ones skipped, touching ones joined),
// and the most intervals open at once. A link's figures without sorting its
// flows twice.
struct EventSweep {
  double busy_s = 0;
  int peak = 0;
};
EventSweep sweep_sorted_events(const std::vector<std::pair<double, int>>& events);
// The same over two sorted runs of events, [0, middle) and [middle, end):
// what sweep_sorted_events gives on their std::inplace_merge (the first
// run's event first between equal ones), without merging them.
EventSweep sweep_sorted_runs(const std::vector<std::pair<double, int>>& events, std::size_t middle);

}  // namespace trainsim::analysis

namespace trainsim::analysis {

// Length of [lo, hi) covered by a merged interval list (binary search).
double covered_length(const std::vector<Interval>& merged, double lo, double hi);
double covered_length(std::span<const Interval> merged, double lo, double hi);
// The intervals of a merged list that can cover any of [lo, hi): for a
// caller that asks covered_length many times within one window (the same
// lengths, summed in the same order, from a search over a few intervals).
std::span<const Interval> within(const std::vector<Interval>& merged, double lo, double hi);

}  // namespace trainsim::analysis
