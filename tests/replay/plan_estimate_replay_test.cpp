// The plan search's analytic estimate (workloads/planning/plan_estimate.hpp) against
// the SimGrid replay of the same plan: with uniform stages on a free network
// both must give each schedule's closed-form iteration time, so the estimate
// ranks plans by what the simulation would find. One simulation per test.
#include <gtest/gtest.h>

#include "support/replayed_summary.hpp"
#include "support/test_cluster.hpp"
#include "workloads/planning/plan_estimate.hpp"

namespace trainsim::sim {
namespace {

using workloads::ScheduleKind;

void expect_estimate_matches_replay(ScheduleKind kind, int p, int m, int v) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 48;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m};
  plan.schedule = kind;
  plan.virtual_stages = v;
  const auto cluster = testing::free_network_cluster(p);
  const testing::FixedCostModel cost(1e-3, 1.2e-3, 0.8e-3);
  const auto summary = testing::replayed_summary(model, plan, cluster, cost);
  const auto estimate = workloads::estimate_plan(model, plan, cluster, cost);
  EXPECT_NEAR(estimate.iteration_s, summary.iteration_time_s, 1e-6 * summary.iteration_time_s);
}

// DualPipe: the estimate takes DeepSeek-V3's (p/2 - 1)(F&B + B - 3W) per
// whole-stage chunk, which bounds the replay from above (the replay has no
// batched-send waits): with F, I, W = 1, 1.2, 0.8 ms, p 4, m 8 it reads
// 8 x 3 + (1 + 2 x 2 - 3 x 0.8) = 26.6 ms against the replay's 25.4 ms (the
// op lists run on their dependencies alone: 1.4 ms idle).
TEST(PlanEstimateReplay, DualPipeEstimateIsThePapersBoundAboveTheReplay) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 48;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 8};
  plan.schedule = ScheduleKind::dualpipe;
  plan.virtual_stages = 2;
  const auto cluster = testing::free_network_cluster(4);
  const testing::FixedCostModel cost(1e-3, 1.2e-3, 0.8e-3);
  const auto summary = testing::replayed_summary(model, plan, cluster, cost);
  const auto estimate = workloads::estimate_plan(model, plan, cluster, cost);
  EXPECT_NEAR(estimate.iteration_s, 26.6e-3, 1e-6 * 26.6e-3);
  EXPECT_NEAR(summary.iteration_time_s, 25.4e-3, 1e-6 * 25.4e-3);
}

TEST(PlanEstimateReplay, OneFOneBMatchesTheReplay) {
  expect_estimate_matches_replay(ScheduleKind::one_f_one_b, 4, 8, 1);
}

TEST(PlanEstimateReplay, InterleavedMatchesTheReplay) {
  expect_estimate_matches_replay(ScheduleKind::interleaved_one_f_one_b, 4, 8, 2);
}

TEST(PlanEstimateReplay, ZbH1MatchesTheReplay) {
  expect_estimate_matches_replay(ScheduleKind::zb_h1, 4, 8, 1);
}

}  // namespace
}  // namespace trainsim::sim
