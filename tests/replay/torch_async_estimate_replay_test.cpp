// The plan estimate of torch's async TP (plan.tp_comm_overlap: torch_async;
// workloads/planning/plan_estimate.cpp, async_tp_s) against the SimGrid
// replay of the same plan: per layer each fused op takes exposed + c +
// (k - 1) max(c, m) in place of its GEMM, c one shard GEMM, m one shard's
// copy, and the backward's reduce-scatters the pass leaves to NCCL run
// serially. Before, the estimate ran userbuffers' pipeline over every TP
// collective, blind to the shard GEMMs and the copies: 24.7 ms against the
// replay's 78.1 ms on the eight-way plan below (-68%), 74.03 against
// 74.34 ms on the two-way one. GPT-3 1.3B (24 layers), one stage,
// one micro-batch of 2,048 tokens, sequence parallel; the fused ops come
// from a stub with fixed times over the analytic costs. One simulation per
// test.
#include <gtest/gtest.h>

#include <vector>

#include "support/fixed_async_tp_cost.hpp"
#include "support/replayed_summary.hpp"
#include "support/test_cluster.hpp"
#include "workloads/planning/plan_estimate.hpp"

namespace trainsim::sim {
namespace {

using testing::FixedAsyncTpCost;

using workloads::AsyncTpUnit;
using workloads::CollectiveOp;
using workloads::OpCost;
using workloads::PipeOpKind;
using workloads::StageSlice;

void expect_estimate_is_the_replay(int tp, double shard_gemm_s) {
  const auto model = *workloads::find_model_preset("gpt3-1.3b");
  workloads::ParallelPlan plan{.dp = 1, .tp = tp, .micro_batch_size = 1, .global_batch_size = 1};
  plan.sequence_parallel = true;
  plan.tp_comm_overlap = workloads::TpCommOverlap::torch_async;
  auto cluster = testing::uniform_cluster(1, tp, 100e9, 2e-6);
  cluster.collectives.launch_latency_s = 5e-6;
  const workloads::AnalyticCostModel analytic(model, plan, 0.5);
  const AsyncTpUnit gather{.collective = CollectiveOp::all_gather,
                           .gemm_s = 2e-5,
                           .shard_gemm_s = shard_gemm_s,
                           .exposed_s = 3e-6};
  AsyncTpUnit scatter = gather;
  scatter.collective = CollectiveOp::reduce_scatter;
  const FixedAsyncTpCost cost(analytic, {gather, scatter}, {gather});
  const double replayed = testing::replayed_summary(model, plan, cluster, cost).iteration_time_s;
  const double estimate = workloads::estimate_plan(model, plan, cluster, cost).iteration_s;
  EXPECT_NEAR(estimate, replayed, 1e-6 * replayed)
      << "estimate " << estimate << " s, replay " << replayed << " s";
}

// Two-way, the copies (a 4.19 MB shard over 100 GB/s, 2 us latency and a
// 5 us launch: 49 us) outlast the 5 us shard GEMMs.
TEST(TorchAsyncEstimateReplay, TwoWaySplitWhereTheCopiesShowIsTheReplaysIteration) {
  expect_estimate_is_the_replay(2, 5e-6);
}

// Eight-way, the 100 us shard GEMMs hide the copies (1.05 MB: 17.5 us).
TEST(TorchAsyncEstimateReplay, EightWaySplitWhereTheShardGemmsHideTheCopiesIsTheReplaysIteration) {
  expect_estimate_is_the_replay(8, 1e-4);
}

}  // namespace
}  // namespace trainsim::sim
