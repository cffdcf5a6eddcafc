#include "analysis/intervals.hpp"

#include <algorithm>

namespace trainsim::analysis {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  // Most lists come in order already (a stream's records end in the order
  // they start): checked in one pass rather than sorted again. Merged in
  // place, each interval written at or before where it was read.
  if (!std::is_sorted(intervals.begin(), intervals.end()))
    std::sort(intervals.begin(), intervals.end());
  std::size_t n = 0;
  for (const auto& iv : intervals) {
    if (iv.second <= iv.first)
      continue;
    if (n > 0 && iv.first <= intervals[n - 1].second)
      intervals[n - 1].second = std::max(intervals[n - 1].second, iv.second);
    else
      intervals[n++] = iv;
  }
  intervals.resize(n);
  return intervals;
}

double total_length(const std::vector<Interval>& merged) {
  double total = 0;
  for (const auto& [a, b] : merged)
    total += b - a;
  return total;
}

namespace {

// sweep_sorted_events' state, one event at a time.
class Sweep {
 public:
  void add(double time, int delta) {
    open_ += delta;
    out_.peak = std::max(out_.peak, open_);
    if (open_ > 0 && !busy_) {
      busy_ = true;
      if (pending_ && time <= end_) {  // touching: merge_intervals joins them
        pending_ = false;
        return;
      }
      if (pending_)
        out_.busy_s += end_ - start_;
      pending_ = false;
      start_ = time;
    } else if (open_ <= 0 && busy_) {
      // A zero-length interval at an idle time takes `open` to -1 and back
      // to 0 without opening one.
      busy_ = false;
      pending_ = true;
      end_ = time;
    }
  }
  EventSweep done() {
    if (pending_)
      out_.busy_s += end_ - start_;
    pending_ = false;
    return out_;
  }

 private:
  EventSweep out_;
  int open_ = 0;
  bool busy_ = false;     // inside a merged interval
  bool pending_ = false;  // a merged interval [start, end] ended, not yet summed
  double start_ = 0;
  double end_ = 0;
};

}  // namespace

EventSweep sweep_sorted_events(const std::vector<std::pair<double, int>>& events) {
  Sweep sweep;
  for (const auto& [time, delta] : events)
    sweep.add(time, delta);
  return sweep.done();
}

EventSweep sweep_sorted_runs(const std::vector<std::pair<double, int>>& events, std::size_t middle) {
  Sweep sweep;
  std::size_t a = 0, b = middle;
  while (a < middle || b < events.size()) {
    // std::inplace_merge takes the second run's event only when it is less.
    const bool second = b < events.size() && (a >= middle || events[b] < events[a]);
    const auto& [time, delta] = second ? events[b++] : events[a++];
    sweep.add(time, delta);
  }
  return sweep.done();
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
  return covered_length(std::span<const Interval>(merged), lo, hi);
}

double covered_length(std::span<const Interval> merged, double lo, double hi) {
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

std::span<const Interval> within(const std::vector<Interval>& merged, double lo, double hi) {
  // From the first interval ending after lo to the first starting at or
  // after hi (merged intervals are disjoint: their starts and ends rise).
  const auto first = std::upper_bound(merged.begin(), merged.end(), lo,
                                      [](double x, const Interval& iv) { return x < iv.second; });
  const auto last =
      std::partition_point(first, merged.end(), [&](const Interval& iv) { return iv.first < hi; });
  return {first, last};
}

}  // namespace trainsim::analysis
