#include "analysis/intervals.hpp"

#include <gtest/gtest.h>

namespace trainsim::analysis {
namespace {

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

}  // namespace
}  // namespace trainsim::analysis
