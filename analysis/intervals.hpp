#pragma once
// Busy time as sorted, disjoint intervals: what "utilization" and "overlap"
// are computed from.
#include <utility>
#include <vector>

namespace trainsim::analysis {

using Interval = std::pair<double, double>;

// Sorts and merges overlapping or touching intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
// Total length of merged intervals.
double total_length(const std::vector<Interval>& merged);
// Length of the intersection of two merged interval lists.
double overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace trainsim::analysis

namespace trainsim::analysis {

// Length of [lo, hi) covered by a merged interval list (binary search).
double covered_length(const std::vector<Interval>& merged, double lo, double hi);

}  // namespace trainsim::analysis
