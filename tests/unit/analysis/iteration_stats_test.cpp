// Iteration-time distribution and confidence intervals: known values.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/iteration_stats.hpp"

namespace trainsim::analysis {
namespace {

TEST(IterationStats, PercentilesInterpolateLikeNumpy) {
  const auto s = iteration_stats({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.mean_s, 3);
  EXPECT_DOUBLE_EQ(s.p50_s, 3);
  EXPECT_DOUBLE_EQ(s.p95_s, 4.8);  // numpy.percentile([1..5], 95) = 4.8
  EXPECT_DOUBLE_EQ(s.p99_s, 4.96);
  EXPECT_DOUBLE_EQ(s.max_s, 5);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_EQ(s.times_s, (std::vector<double>{5, 1, 4, 2, 3}));  // in iteration order
}

TEST(IterationStats, ConfidenceIntervalUsesStudentT) {
  // mean 2, sample sd 1, n 3: half width t(0.975, 2) x 1 / sqrt(3).
  const auto ci = confidence_interval_95({1, 2, 3});
  EXPECT_DOUBLE_EQ(ci.mean, 2);
  EXPECT_NEAR(ci.half_width, 4.303 / std::sqrt(3.0), 1e-12);
  EXPECT_DOUBLE_EQ(confidence_interval_95({7}).half_width, 0);
  EXPECT_DOUBLE_EQ(student_t_975(1000), 1.96);
}

}  // namespace
}  // namespace trainsim::analysis
