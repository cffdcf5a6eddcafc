// DeepEP with expert TP between 1 and tp (Megatron's flex dispatcher:
// workloads/expert_parallel.hpp, dispatch_spans_expert_tp) replayed by
// SimGrid: the exchange over each expert-TP x EP block of 16 GPUs on two
// nodes runs DeepEP's relayed flows, and the iteration agrees with the plan
// estimate, whose exchange time is the closed form of the same bytes over
// the NIC and NVLink (workloads/planning/expert_estimate.hpp). One
// simulation per TEST.
#include <gtest/gtest.h>

#include "support/replayed_summary.hpp"
#include "support/test_cluster.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/planning/plan_estimate.hpp"

namespace trainsim::sim {
namespace {

// DeepSeek-V2-Lite shrunk to 4 layers (the first dense), 2,048-token
// sequences, on 4 nodes of 8 A100s (NVLink 200 GB/s, one 5 GB/s NIC per
// GPU): tp 4 with sequence parallelism, dp 8, ep 8, expert TP 2.
TEST(DeepepExpertTpReplay, TheBlocksExchangeReplaysAsTheEstimateCountsIt) {
  auto model = *workloads::find_model_preset("deepseek-v2-lite");
  model.layers = 4;
  model.seq_len = 2048;
  workloads::ParallelPlan plan{.dp = 8, .tp = 4, .ep = 8, .micro_batch_size = 1, .global_batch_size = 16};
  plan.etp = 2;
  plan.sequence_parallel = true;
  plan.zero_stage = 1;
  plan.moe_dispatcher = workloads::MoeDispatcher::deepep;
  ASSERT_TRUE(workloads::dispatch_spans_expert_tp(model, plan));
  auto cluster = testing::uniform_cluster(4, 8, 200e9, 1e-6);
  cluster.groups.front().nic = {5e9, 2e-6};
  const workloads::AnalyticCostModel cost(model, plan, 0.5);
  const auto summary = testing::replayed_summary(model, plan, cluster, cost);
  const auto estimate = workloads::estimate_plan(model, plan, cluster, cost);
  EXPECT_GT(estimate.ep_comm_s, 0.05 * estimate.iteration_s)  // the exchange matters here
      << estimate.ep_comm_s << " s of " << estimate.iteration_s << " s";
  EXPECT_NEAR(estimate.iteration_s, summary.iteration_time_s, 0.02 * summary.iteration_time_s)
      << "estimate " << estimate.iteration_s << " s, replay " << summary.iteration_time_s << " s";
}

}  // namespace
}  // namespace trainsim::sim
