#include "platforms/nearly_sorted.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "analysis/fold_classes.hpp"

namespace trainsim::analysis {
namespace {

using Keyed = std::vector<std::pair<double, std::uint32_t>>;

Keyed keyed_by_place(const std::vector<double>& times) {
  Keyed keyed;
  for (std::uint32_t k = 0; k < times.size(); ++k)
    keyed.emplace_back(times[k], k);
  return keyed;
}

// A link's starts listed as its flows end: each flow ends a little after it
// starts, so only the flows that overlap it are out of order around it.
TEST(SortNearlySorted, SortsStartsListedByEndAsStdSortDoes) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> length(0.5, 3.0);
  std::vector<std::pair<double, double>> flows;  // (end, start)
  for (int k = 0; k < 2000; ++k) {
    const double start = k * 0.25 + length(random);
    flows.emplace_back(start + length(random), start);
  }
  std::sort(flows.begin(), flows.end());
  std::vector<double> starts;
  for (const auto& [end, start] : flows)
    starts.push_back(start);
  auto expected = keyed_by_place(starts);
  std::sort(expected.begin(), expected.end());
  auto sorted = keyed_by_place(starts);
  platforms::sort_nearly_sorted(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, expected);
}

// Far from sorted, the insertion sort runs out of moves and std::sort takes
// over from where it stands: still the one sorted sequence.
TEST(SortNearlySorted, SortsAReversedOrShuffledListAsStdSortDoes) {
  std::vector<double> times;
  for (int k = 0; k < 500; ++k)
    times.push_back(500.0 - k);
  for (int repeat = 0; repeat < 2; ++repeat) {
    auto expected = keyed_by_place(times);
    std::sort(expected.begin(), expected.end());
    auto sorted = keyed_by_place(times);
    platforms::sort_nearly_sorted(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, expected);
    std::shuffle(times.begin(), times.end(), std::mt19937_64(11));
  }
  std::vector<std::pair<double, int>> events{{2, -1}, {1, -1}, {2, -1}, {0, -1}};
  platforms::sort_nearly_sorted(events.begin(), events.end());
  EXPECT_EQ(events, (std::vector<std::pair<double, int>>{{0, -1}, {1, -1}, {2, -1}, {2, -1}}));
  std::vector<std::pair<double, int>> none;
  platforms::sort_nearly_sorted(none.begin(), none.end());
  EXPECT_TRUE(none.empty());
}

// One link, flows listed as they end: [0,4], [3,5], [1,6], [3,7]. In order
// of start, ties (the two starting at 3) in the order they were listed.
TEST(LinkClasses, OrderByStartPutsTheFlowsInOrderOfStartTiesAsListed) {
  Timeline t;
  t.links = {{"link", 100, 0}};
  t.flow_links = {0};
  t.flows = {{0, 0, 1, 10, 0, 4, 0, 1},
             {1, 0, 1, 10, 3, 5, 0, 1},
             {2, 0, 1, 10, 1, 6, 0, 1},
             {3, 0, 1, 10, 3, 7, 0, 1}};
  auto classes = LinkClasses::of(t);
  Keyed keyed;
  classes.order_by_start(0, keyed);
  const auto list = classes.flows_of(0);
  EXPECT_EQ(std::vector<std::uint32_t>(list.begin(), list.end()), (std::vector<std::uint32_t>{0, 2, 1, 3}));
  EXPECT_EQ(keyed, (Keyed{{0, 0}, {1, 2}, {3, 1}, {3, 3}}));
  // A list in that order already is left as it is.
  classes.order_by_start(0, keyed);
  const auto again = classes.flows_of(0);
  EXPECT_EQ(std::vector<std::uint32_t>(again.begin(), again.end()), (std::vector<std::uint32_t>{0, 2, 1, 3}));
  EXPECT_EQ(keyed, (Keyed{{0, 0}, {1, 1}, {3, 2}, {3, 3}}));
}

}  // namespace
}  // namespace trainsim::analysis
