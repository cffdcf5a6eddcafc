#include "analysis/intervals.hpp"

#include <algorithm>

namespace trainsim::analysis {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> merged;
  for (const auto& iv : intervals) {
    if (iv.second <= iv.first)
      continue;
    if (!merged.empty() && iv.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, iv.second);
    else
      merged.push_back(iv);
  }
  return merged;
}

double total_length(const std::vector<Interval>& merged) {
  double total = 0;
  for (const auto& [a, b] : merged)
    total += b - a;
  return total;
}

EventSweep sweep_sorted_events(const std::vector<std::pair<double, int>>& events) {
  EventSweep out;
  int open = 0;
  bool busy = false;     // inside a merged interval
  bool pending = false;  // a merged interval [start, end] ended, not yet summed
  double start = 0;
  double end = 0;
  for (const auto& [time, delta] : events) {
    open += delta;
    out.peak = std::max(out.peak, open);
    if (open > 0 && !busy) {
      busy = true;
      if (pending && time <= end) {  // touching: merge_intervals joins them
        pending = false;
        continue;
      }
      if (pending)
        out.busy_s += end - start;
      pending = false;
      start = time;
    } else if (open <= 0 && busy) {
      // A zero-length interval at an idle time takes `open` to -1 and back
      // to 0 without opening one.
      busy = false;
      pending = true;
      end = time;
    }
  }
  if (pending)
    out.busy_s += end - start;
  return out;
}

double overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo)
      total += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

}  // namespace trainsim::analysis

namespace trainsim::analysis {

double covered_length(const std::vector<Interval>& merged, double lo, double hi) {
  if (hi <= lo)
    return 0;
  // First interval ending after lo.
  auto it = std::upper_bound(merged.begin(), merged.end(), lo,
                             [](double x, const Interval& iv) { return x < iv.second; });
  double total = 0;
  for (; it != merged.end() && it->first < hi; ++it)
    total += std::min(hi, it->second) - std::max(lo, it->first);
  return total;
}

}  // namespace trainsim::analysis
