#include "analysis/intervals.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

namespace trainsim::analysis {
namespace {

// Up to 39 intervals with endpoints on a coarse grid (many ties and touching
// intervals) and lengths in steps of 0.3 (a different summation order shows
// in the last bits); a quarter of them of zero length if asked.
std::vector<Interval> random_intervals(std::mt19937_64& rng, bool zero_lengths) {
  std::vector<Interval> intervals;
  const int n = static_cast<int>(rng() % 40);
  for (int i = 0; i < n; ++i) {
    const double a = static_cast<double>(rng() % 30) * 0.1;
    const double b = zero_lengths && rng() % 4 == 0 ? a : a + static_cast<double>(rng() % 7) * 0.3;
    intervals.emplace_back(a, b);
  }
  return intervals;
}

TEST(Intervals, MergeJoinsOverlappingAndTouchingIntervals) {
  const auto m = merge_intervals({{3, 4}, {0, 1}, {1, 2}, {3.5, 5}, {7, 7}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], Interval(0, 2));
  EXPECT_EQ(m[1], Interval(3, 5));
  EXPECT_DOUBLE_EQ(total_length(m), 4);
}

TEST(Intervals, OverlapOfTwoListsIsTheLengthOfTheirIntersection) {
  const auto a = merge_intervals({{0, 4}, {6, 10}});
  const auto b = merge_intervals({{3, 7}, {9, 12}});
  EXPECT_DOUBLE_EQ(overlap_length(a, b), 1 + 1 + 1);
  EXPECT_DOUBLE_EQ(overlap_length(a, {}), 0);
}

TEST(Intervals, MergeOfAListInOrderEqualsTheMergeOfItsShuffle) {
  // merge_intervals skips the sort of a list already in order: the same
  // merged list either way, and the closed form's.
  const std::vector<Interval> in_order{{0, 1}, {1, 2}, {2, 2}, {3, 4}, {3.5, 5}, {7, 7}, {8, 9}};
  std::vector<Interval> shuffled{{8, 9}, {3.5, 5}, {0, 1}, {7, 7}, {3, 4}, {2, 2}, {1, 2}};
  const auto a = merge_intervals(in_order);
  EXPECT_EQ(a, merge_intervals(shuffled));
  EXPECT_EQ(a, (std::vector<Interval>{{0, 2}, {3, 5}, {8, 9}}));
}

TEST(Intervals, CoveredLengthWithinAWindowEqualsItOverTheWholeListBitForBit) {
  // A walk asks covered_length of many pieces of one window [a, b): over the
  // window's intervals (within) as over the whole list, bit for bit.
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const auto intervals = random_intervals(rng, false);
    const auto merged = merge_intervals(intervals);
    const double a = static_cast<double>(rng() % 40) * 0.1;
    const double b = a + static_cast<double>(rng() % 20) * 0.17;
    const auto window = within(merged, a, b);
    for (int k = 0; k < 20; ++k) {
      const double lo = a + (b - a) * static_cast<double>(rng() % 11) / 10;
      const double hi = lo + (b - lo) * static_cast<double>(rng() % 11) / 10;
      EXPECT_EQ(covered_length(window, lo, hi), covered_length(merged, lo, hi)) << "seed " << seed;
    }
  }
  const std::vector<Interval> merged{{0, 1}, {2, 3}, {4, 5}};
  EXPECT_EQ(within(merged, 1.5, 3.5).size(), 1u);  // [2, 3) alone
  EXPECT_EQ(covered_length(within(merged, 0.5, 4.5), 0.5, 4.5), 0.5 + 1 + 0.5);
}

std::vector<std::pair<double, int>> sorted_events(const std::vector<Interval>& intervals) {
  std::vector<std::pair<double, int>> events;
  for (const auto& [a, b] : intervals) {
    events.emplace_back(a, +1);
    events.emplace_back(b, -1);
  }
  std::sort(events.begin(), events.end());
  return events;
}

TEST(Intervals, SweepOfSortedEventsGivesTheMergedLengthAndThePeak) {
  // Touching intervals joined, a zero-length one in a gap and one at a join
  // skipped, three open at once over [3.5, 4).
  const std::vector<Interval> intervals{{0, 1}, {1, 2}, {7, 7}, {2, 2}, {3, 4}, {3.5, 5}, {3.5, 4.5}};
  const auto sweep = sweep_sorted_events(sorted_events(intervals));
  EXPECT_EQ(sweep.busy_s, total_length(merge_intervals(intervals)));
  EXPECT_EQ(sweep.busy_s, 4);
  EXPECT_EQ(sweep.peak, 3);
  EXPECT_EQ(sweep_sorted_events({}).busy_s, 0);
  EXPECT_EQ(sweep_sorted_events(sorted_events({{5, 5}})).peak, 0);
}

TEST(Intervals, SweepEqualsMergedLengthBitForBitOnRandomIntervals) {
  // Endpoints on a coarse grid (many ties, touching and zero-length
  // intervals) and irrational-looking lengths, so that a different summation
  // order would show in the last bits.
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const auto intervals = random_intervals(rng, true);
    const auto sweep = sweep_sorted_events(sorted_events(intervals));
    EXPECT_EQ(sweep.busy_s, total_length(merge_intervals(intervals))) << "seed " << seed;
    int peak = 0;
    for (const auto& [a, b] : intervals) {
      if (b <= a)
        continue;
      int open = 0;  // intervals open just after a, [a, b) half-open
      for (const auto& [c, d] : intervals)
        open += c <= a && a < d ? 1 : 0;
      peak = std::max(peak, open);
    }
    EXPECT_EQ(sweep.peak, peak) << "seed " << seed;
  }
}

// A link's ends and starts sorted apart and swept as two runs: the figures
// of one sweep over both merged, bit for bit (utilization.cpp's links).
TEST(Intervals, SweepOfTwoSortedRunsEqualsTheSweepOfTheirMergeBitForBit) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::pair<double, int>> ends, starts;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const double a = static_cast<double>(rng() % 30) * 0.1;
      const double b = rng() % 4 == 0 ? a : a + static_cast<double>(rng() % 7) * 0.3;
      starts.emplace_back(a, +1);
      ends.emplace_back(b, -1);
    }
    std::sort(ends.begin(), ends.end());
    std::sort(starts.begin(), starts.end());
    std::vector<std::pair<double, int>> runs = ends;
    runs.insert(runs.end(), starts.begin(), starts.end());
    std::vector<std::pair<double, int>> merged = runs;
    std::inplace_merge(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(ends.size()),
                       merged.end());
    const auto swept = sweep_sorted_runs(runs, ends.size());
    const auto expected = sweep_sorted_events(merged);
    EXPECT_EQ(swept.busy_s, expected.busy_s) << "seed " << seed;
    EXPECT_EQ(swept.peak, expected.peak) << "seed " << seed;
  }
}

}  // namespace
}  // namespace trainsim::analysis
