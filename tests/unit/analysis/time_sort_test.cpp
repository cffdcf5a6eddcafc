#include "analysis/time_sort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace trainsim::analysis {
namespace {

using Keyed = std::vector<std::pair<double, std::uint32_t>>;

// Times as a run's flows have them: many ties, zero, sub-microsecond
// differences on top of seconds, and the odd huge or tiny value.
Keyed flow_starts(std::size_t n, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> seconds(0.0, 24.0);
  std::uniform_int_distribution<int> pick(0, 9);
  Keyed keyed;
  std::vector<double> earlier;
  for (std::uint32_t k = 0; k < n; ++k) {
    double t = seconds(random);
    switch (pick(random)) {
      case 0:
        t = 0.0;
        break;
      case 1:
      case 2:
        if (!earlier.empty())
          t = earlier[random() % earlier.size()];  // a tie
        break;
      case 3:
        t = std::nextafter(t, 1e300);
        break;
      case 4:
        t = std::ldexp(t, -1060);  // subnormal
        break;
      case 5:
        t = t * 1e12;
        break;
      default:
        break;
    }
    earlier.push_back(t);
    keyed.emplace_back(t, k);
  }
  return keyed;
}

TEST(TimeSort, PutsFlowsInStdSortsOrderWithTiesInListOrder) {
  for (const std::size_t n : {0, 1, 2, 63, 64, 65, 1000, 40000}) {
    for (std::uint32_t seed = 1; seed <= 3; ++seed) {
      Keyed keyed = flow_starts(n, seed);
      Keyed expected = keyed;
      std::sort(expected.begin(), expected.end());
      Keyed scratch;
      sort_by_time(keyed.begin(), keyed.end(), scratch);
      EXPECT_EQ(keyed, expected) << n << " flows, seed " << seed;
    }
  }
}

TEST(TimeSort, SortsAPartOfAVectorWithOneTagAsStdSortDoes) {
  // analysis/utilization.cpp: ends (-1) then starts (+1), each half sorted.
  std::vector<std::pair<double, int>> ev;
  const Keyed starts = flow_starts(5000, 7);
  for (const auto& [t, k] : starts)
    ev.emplace_back(t + 1.0, -1);
  for (const auto& [t, k] : starts)
    ev.emplace_back(t, +1);
  auto expected = ev;
  const auto half = static_cast<std::ptrdiff_t>(starts.size());
  std::sort(expected.begin() + half, expected.end());
  std::vector<std::pair<double, int>> scratch;
  sort_by_time(ev.begin() + half, ev.end(), scratch);
  EXPECT_EQ(ev, expected);
}

TEST(TimeSort, InfinityComesLast) {
  Keyed keyed = flow_starts(300, 11);
  keyed[5].first = std::numeric_limits<double>::infinity();
  keyed[6].first = std::numeric_limits<double>::max();
  Keyed expected = keyed;
  std::sort(expected.begin(), expected.end());
  Keyed scratch;
  sort_by_time(keyed.begin(), keyed.end(), scratch);
  EXPECT_EQ(keyed, expected);
  EXPECT_EQ(keyed.back().first, std::numeric_limits<double>::infinity());
}

TEST(TimeSort, NegativeTimesAndMinusZeroKeepStdSortsOrder) {
  // Their bits do not order as the values do: such a list is sorted by
  // std::sort (-0.0 ties with 0.0, so the tags decide).
  for (const double odd : {-0.0, -1.5, -1e-300}) {
    Keyed keyed = flow_starts(500, 13);
    keyed[0].first = 0.0;
    keyed[1].first = odd;
    Keyed expected = keyed;
    std::sort(expected.begin(), expected.end());
    Keyed scratch;
    sort_by_time(keyed.begin(), keyed.end(), scratch);
    EXPECT_EQ(keyed, expected) << odd;
    if (odd == 0.0) {
      const auto zero = std::find_if(keyed.begin(), keyed.end(), [](const auto& p) { return p.second == 0; });
      const auto minus =
          std::find_if(keyed.begin(), keyed.end(), [](const auto& p) { return p.second == 1; });
      EXPECT_EQ(minus - zero, 1);  // -0.0 right after 0.0, not after every positive time
    }
  }
}

}  // namespace
}  // namespace trainsim::analysis
