// DualPipe's overlapped F&B chunk pairs replayed (plan.moe_a2a_overlap):
// each pair of the main steps runs merged, layer by layer, so one
// micro-batch's expert all-to-alls fly under the other's compute, as
// DualPipe-V's do (the same builder path, iteration_builder.cpp's
// overlaps_previous). The small MoE plan of moe_overlap_estimate_replay_test
// (DeepSeek-V2-Lite's MoE layers shrunk to 8 layers, EP groups across
// nodes) with pp 2 under DualPipe, 16 micro-batches per pipeline (8 each
// way). Measured 2026-12-06: the serial pairs replay to 1.1786 s (the plan
// estimate agrees to 1e-6: p = 2 leaves DualPipe no bubble, both ends
// starting at once), the overlapped pairs to 1.0486 s (11% less; the
// estimate's merged steps 1.0508 s). One simulation per TEST.
#include <gtest/gtest.h>

#include <string>

#include "support/replayed_summary.hpp"
#include "support/test_cluster.hpp"
#include "workloads/planning/plan_estimate.hpp"

namespace trainsim::sim {
namespace {

struct Case {
  workloads::ModelSpec model;
  workloads::ParallelPlan plan;
  platforms::ClusterSpec cluster;
};

Case dualpipe_case(bool overlap) {
  Case c;
  c.model = *workloads::find_model_preset("deepseek-v2-lite");
  c.model.layers = 8;
  c.model.seq_len = 2048;
  c.plan = {.dp = 8, .tp = 1, .pp = 2, .ep = 8, .micro_batch_size = 1, .global_batch_size = 128};
  c.plan.schedule = workloads::ScheduleKind::dualpipe;
  c.plan.virtual_stages = 2;
  c.plan.recompute = workloads::Recompute::full;
  c.plan.zero_stage = 1;
  c.plan.moe_a2a_overlap = overlap;
  c.cluster = testing::uniform_cluster(4, 4, 200e9, 1e-6);
  c.cluster.groups.front().nic = {25e9, 2e-6};
  return c;
}

// The plan estimate with the pairs run back to back: its exposed
// all-to-alls are the serial ones.
double serial_estimate_s() {
  const Case c = dualpipe_case(false);
  const workloads::AnalyticCostModel cost(c.model, c.plan, 0.5);
  return workloads::estimate_plan(c.model, c.plan, c.cluster, cost).iteration_s;
}

TEST(DualPipeReplay, OverlappedPairsHideAllToAllsTheSerialRunShows) {
  const Case c = dualpipe_case(true);
  const workloads::AnalyticCostModel cost(c.model, c.plan, 0.5);
  const auto summary = testing::replayed_summary(c.model, c.plan, c.cluster, cost);
  const auto estimate = workloads::estimate_plan(c.model, c.plan, c.cluster, cost);
  const double replayed = summary.iteration_time_s;
  RecordProperty("replay_s", std::to_string(replayed));
  RecordProperty("estimate_s", std::to_string(estimate.iteration_s));
  RecordProperty("exposed_ep_s", std::to_string(estimate.ep_comm_s));
  EXPECT_NEAR(estimate.iteration_s, replayed, 0.01 * replayed)
      << "estimate " << estimate.iteration_s << " s, replay " << replayed << " s";
  // The serial run (SerialPairsMatchTheEstimate pins the estimate to its
  // replay) takes more than 8% longer.
  EXPECT_LT(replayed, 0.92 * serial_estimate_s())
      << "replay " << replayed << " s, serial " << serial_estimate_s();
}

TEST(DualPipeReplay, SerialPairsMatchTheEstimate) {
  const Case c = dualpipe_case(false);
  const workloads::AnalyticCostModel cost(c.model, c.plan, 0.5);
  const auto summary = testing::replayed_summary(c.model, c.plan, c.cluster, cost);
  const double replayed = summary.iteration_time_s;
  RecordProperty("replay_s", std::to_string(replayed));
  RecordProperty("estimate_s", std::to_string(serial_estimate_s()));
  EXPECT_NEAR(serial_estimate_s(), replayed, 1e-3 * replayed)
      << "estimate " << serial_estimate_s() << " s, replay " << replayed << " s";
}

}  // namespace
}  // namespace trainsim::sim
