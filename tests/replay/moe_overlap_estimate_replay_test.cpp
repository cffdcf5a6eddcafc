// The plan estimate of plan.moe_a2a_overlap (workloads/planning/merged_step_estimate.hpp):
// the merged F&B step's list schedule against closed forms worked by hand,
// then the whole estimate against the SimGrid replay of a small MoE plan
// whose all-to-alls cross nodes and take about a forward piece each, where
// hiding them under the other op's whole compute (the estimate before the
// merged step) is more than 10% optimistic; and the same plan under skewed
// routing. One simulation per case.
#include <gtest/gtest.h>

#include <cmath>

#include "support/replayed_summary.hpp"
#include "support/test_cluster.hpp"
#include "workloads/planning/merged_step_estimate.hpp"
#include "workloads/planning/plan_estimate.hpp"

namespace trainsim::sim {
namespace {

using workloads::merged_step_s;
using workloads::MergedOp;

TEST(MergedStepEstimate, WithoutAllToAllsTheStepIsTheTwoOpsCompute) {
  const MergedOp forward{.pieces = {{1, 0}, {2, 0}}, .tail_s = 0};
  const MergedOp backward{.pieces = {{3, 0}, {4, 0}}, .tail_s = 0};
  EXPECT_DOUBLE_EQ(merged_step_s(forward, backward), 10.0);
}

TEST(MergedStepEstimate, ABackwardAllToAllHidesOnlyUnderTheNextForwardPiece) {
  // F0 [0, 1], its all-to-all [1, 1.5] under B0 [1, 4]; B0's [4, 5] under
  // F1 [4, 5]; F1's [5, 5.5] has nothing to hide under (B1 waits for the
  // forward's end); B1 [5.5, 8.5], its all-to-all [8.5, 9.5].
  const MergedOp forward{.pieces = {{1, 0.5}, {1, 0.5}}, .tail_s = 0};
  const MergedOp backward{.pieces = {{3, 1}, {3, 1}}, .tail_s = 0};
  EXPECT_DOUBLE_EQ(merged_step_s(forward, backward), 9.5);
}

TEST(MergedStepEstimate, AllToAllsInFlightTogetherShareTheLinks) {
  // F0 [0, 1], its all-to-all (2 s alone) from 1; B0 [1, 2], its (2 s
  // alone) from 2: both at half speed until F0's ends at 4, B0's alone
  // then, at 5. F1 [4, 5]; B1 [5, 6]. Without sharing: 5.
  const MergedOp forward{.pieces = {{1, 2}, {1, 0}}, .tail_s = 0};
  const MergedOp backward{.pieces = {{1, 2}, {1, 0}}, .tail_s = 0};
  EXPECT_DOUBLE_EQ(merged_step_s(forward, backward), 6.0);
}

TEST(MergedStepEstimate, AnOpsTailRunsBeforeItsLastAllToAll) {
  // F: one piece [0, 1], tail [1, 2], all-to-all [2, 3]; B's only piece is
  // its last: after the forward's end, [3, 5], tail [5, 6], all-to-all [6, 7].
  const MergedOp forward{.pieces = {{1, 1}}, .tail_s = 1};
  const MergedOp backward{.pieces = {{2, 1}}, .tail_s = 1};
  EXPECT_DOUBLE_EQ(merged_step_s(forward, backward), 7.0);
}

TEST(MergedStepEstimate, ComputeBesideACommunicationRunsSlowedByTheInterference) {
  // Interference 0.5: F0 [0, 1], its all-to-all [1, 2]; B0 (2 s of work)
  // runs at half speed beside it, 0.5 s done by 2, the rest by 3.5; B1
  // [3.5, 4.5]. Without interference: 4.
  const MergedOp forward{.pieces = {{1, 1}}, .tail_s = 0};
  const MergedOp backward{.pieces = {{2, 0}, {1, 0}}, .tail_s = 0};
  EXPECT_DOUBLE_EQ(merged_step_s(forward, backward, 0.5), 4.5);
  EXPECT_DOUBLE_EQ(merged_step_s(forward, backward), 4.0);
}

// DeepSeek-V2-Lite's MoE layers (64 routed experts of 1,408, top 6, 2
// shared; MLA) shrunk to 8 layers (the first dense), 2,048-token
// sequences; 16 A100s in 4 nodes of 4, one 25 GB/s NIC per GPU (an EP
// group spans two nodes, its exposed all-to-alls are about a sixth of the
// iteration); pp 2, dp 8, ep 8, full recomputation (a backward piece
// sends two pass pairs), 1F1B with 16 micro-batches.
struct OverlapCase {
  workloads::ModelSpec model;
  workloads::ParallelPlan plan;
  platforms::ClusterSpec cluster;
};

OverlapCase overlap_case() {
  OverlapCase c;
  c.model = *workloads::find_model_preset("deepseek-v2-lite");
  c.model.layers = 8;
  c.model.seq_len = 2048;
  c.plan = {.dp = 8, .tp = 1, .pp = 2, .ep = 8, .micro_batch_size = 1, .global_batch_size = 128};
  c.plan.schedule = workloads::ScheduleKind::one_f_one_b;
  c.plan.recompute = workloads::Recompute::full;
  c.plan.zero_stage = 1;
  c.plan.moe_a2a_overlap = true;
  c.cluster = testing::uniform_cluster(4, 4, 200e9, 1e-6);
  c.cluster.groups.front().nic = {25e9, 2e-6};
  return c;
}

TEST(MoeOverlapEstimateReplay, TheMergedStepEstimateTracksTheReplayWithin2Percent) {
  const OverlapCase c = overlap_case();
  const workloads::AnalyticCostModel cost(c.model, c.plan, 0.5);
  const auto summary = testing::replayed_summary(c.model, c.plan, c.cluster, cost);
  const auto estimate = workloads::estimate_plan(c.model, c.plan, c.cluster, cost);
  const double replayed = summary.iteration_time_s;
  EXPECT_NEAR(estimate.iteration_s, replayed, 0.02 * replayed)
      << "estimate " << estimate.iteration_s << " s, replay " << replayed << " s";

  // A case that tells the two models apart: the replay spends more than
  // 10% of the iteration beyond the estimate's other terms, in exposed
  // all-to-alls that hiding them under the other op's whole compute would
  // not see (that estimate: 0.992 s, 16% optimistic; this one 1.172 s
  // against the replay's 1.183 s, docs/plan_search.md).
  EXPECT_GT(replayed - (estimate.iteration_s - estimate.ep_comm_s), 0.1 * replayed);
}

// The same plan with NCCL's kernels taking 16% of the GPU while they run
// (cluster.collectives.compute_interference 0.16, the H100 templates'):
// the pieces beside an all-to-all run slower, in the replay and in the
// merged step (here by little: 1.183 s -> 1.188 s in the replay; the
// closed form above pins the mechanism).
TEST(MoeOverlapEstimateReplay, TheEstimateFollowsTheComputeInterferenceOfTheMergedSteps) {
  OverlapCase c = overlap_case();
  c.cluster.collectives.compute_interference = 0.16;
  const workloads::AnalyticCostModel cost(c.model, c.plan, 0.5);
  const auto summary = testing::replayed_summary(c.model, c.plan, c.cluster, cost);
  const double replayed = summary.iteration_time_s;
  const auto estimate = workloads::estimate_plan(c.model, c.plan, c.cluster, cost);
  EXPECT_NEAR(estimate.iteration_s, replayed, 0.02 * replayed)
      << "estimate " << estimate.iteration_s << " s, replay " << replayed << " s";
}

// The same plan under Zipf-skewed routing (s = 0.8, seed 7), each MoE
// layer at the pace of its busiest EP rank in the replay: the estimate
// takes the busiest rank's expert GEMMs and its share of the all-to-all's
// bytes per layer (routing_skew_estimate.hpp), serial (no overlap) and in
// the merged steps; before, it read the balanced plan's time.
void expect_skewed_estimate_tracks_the_replay(bool overlap) {
  OverlapCase c = overlap_case();
  c.plan.moe_a2a_overlap = overlap;
  const workloads::AnalyticCostModel cost(c.model, c.plan, 0.5);
  const double balanced = workloads::estimate_plan(c.model, c.plan, c.cluster, cost).iteration_s;
  c.model.moe.routing.kind = workloads::RoutingKind::zipf;
  c.model.moe.routing.skew = 0.8;
  c.model.moe.routing.seed = 7;
  const double replayed = testing::replayed_summary(c.model, c.plan, c.cluster, cost).iteration_time_s;
  const double estimate = workloads::estimate_plan(c.model, c.plan, c.cluster, cost).iteration_s;
  EXPECT_NEAR(estimate, replayed, 0.02 * replayed)
      << "estimate " << estimate << " s, replay " << replayed << " s";
  EXPECT_LT(balanced, 0.9 * replayed)
      << "balanced estimate " << balanced << " s, replay " << replayed << " s";
}

TEST(MoeOverlapEstimateReplay, UnderSkewedRoutingTheSerialEstimateTracksTheBusiestRanksReplay) {
  expect_skewed_estimate_tracks_the_replay(false);
}

TEST(MoeOverlapEstimateReplay, UnderSkewedRoutingTheMergedStepEstimateTracksTheBusiestRanksReplay) {
  expect_skewed_estimate_tracks_the_replay(true);
}

}  // namespace
}  // namespace trainsim::sim
