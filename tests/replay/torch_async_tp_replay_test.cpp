// torch's async TP (plan.tp_comm_overlap: torch_async) replayed on SimGrid
// against the hand computation of its pipeline (workloads/torch_async_tp.hpp):
// a fused op ends its exposed kernel + c + (k - 1) max(c, m) after it starts,
// c one shard GEMM, m one shard's copy. GPT-3 1.3B (24 layers, one piece per
// op), one micro-batch of 2,048 tokens, sequence parallel; the forward's
// fused ops come from a stub with fixed times, so the only simulated
// quantity is the copies' time, itself checked against the links: every GPU
// pulls S / k = 2,048 x 2,048 x 2 / k bytes per ring shift through its own
// link, one shift after the other, (k - 1) x 24 shifts each paying the
// link's latency (the barriers). Compute interference is set to 0.5: the
// copy engine's copies must not slow the shard GEMMs beside them. Each TEST
// is one simulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/fixed_async_tp_cost.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::sim {
namespace {

using testing::FixedAsyncTpCost;

using workloads::AsyncTpUnit;
using workloads::CollectiveOp;
using workloads::OpCost;
using workloads::PipeOpKind;
using workloads::StageSlice;

constexpr double kBandwidth_Bps = 100e9, kLatency_s = 2e-6;
constexpr double kLayers = 24, kTokenBytes = 2048.0 * 2048 * 2;

struct ForwardRun {
  double forward_end_s = 0;    // GPU 0's last forward task
  double forward_total_s = 0;  // the forward op's time without async TP (the cost model's)
  std::vector<double> copies_s;
};

ForwardRun replay_forward(int tp, const std::vector<AsyncTpUnit>& units) {
  const auto model = *workloads::find_model_preset("gpt3-1.3b");
  workloads::ParallelPlan plan{.dp = 1, .tp = tp, .micro_batch_size = 1, .global_batch_size = 1};
  plan.sequence_parallel = true;
  plan.tp_comm_overlap = workloads::TpCommOverlap::torch_async;
  auto cluster = testing::uniform_cluster(1, tp, kBandwidth_Bps, kLatency_s);
  cluster.collectives.compute_interference = 0.5;
  const workloads::AnalyticCostModel analytic(model, plan, 0.5);
  const FixedAsyncTpCost cost(analytic, units);
  const auto graph = workloads::build_iteration(model, plan, cluster, cost);
  ForwardRun run;
  run.forward_total_s =
      analytic.forward({.layers = model.layers, .embedding = true, .logits = true}, cluster.gpu_of(0))
          .duration_s;
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  for (const auto& r : timeline.records) {
    const auto& task = graph[r.task];
    if (r.gpu == 0 && task.kind == workloads::TaskKind::forward)
      run.forward_end_s = std::max(run.forward_end_s, r.end_s);
    if (r.gpu == 0 && task.copy_engine)
      run.copies_s.push_back(r.end_s - r.start_s);
  }
  return run;
}

// One fused op's k - 1 ring shifts over all 24 layers, by hand.
double copies_by_hand(int tp) {
  return (tp - 1) * kLayers * (kTokenBytes / tp / kBandwidth_Bps + kLatency_s);
}

// Two-way, the copies longer than the shard GEMMs: each fused op shows its
// exposed kernel, one shard GEMM and all its copies.
TEST(TorchAsyncTpReplay, TwoWaySplitShowsTheCopiesWhenTheyOutlastTheShardGemms) {
  const double c = 5e-6, e = 3e-6;  // per layer
  const std::vector<AsyncTpUnit> units = {
      {.collective = CollectiveOp::all_gather, .gemm_s = 1e-5, .shard_gemm_s = c, .exposed_s = e},
      {.collective = CollectiveOp::reduce_scatter, .gemm_s = 1e-5, .shard_gemm_s = c, .exposed_s = e}};
  const auto run = replay_forward(2, units);
  ASSERT_EQ(run.copies_s.size(), 2u);
  const double m = copies_by_hand(2);  // 24 x (4.19 MB / 100 GB/s + 2 us) = 1.054 ms
  for (double copy : run.copies_s)
    EXPECT_NEAR(copy, m, 1e-3 * m);
  ASSERT_GT(m, kLayers * c);
  // rest, then per op: exposed + first shard + max((k - 1) shards, copies).
  const double rest = run.forward_total_s - kLayers * 2 * 1e-5;
  ASSERT_GT(rest, 0);
  const double expected = rest + 2 * (kLayers * e + kLayers * c + m);
  EXPECT_NEAR(run.forward_end_s, expected, 1e-6 * expected);
}

// Eight-way, the shard GEMMs longer than the copies: the copies hide
// entirely and each fused op takes its exposed kernel and its eight shard
// GEMMs, at full speed beside the copies (undivided, the GEMMs would have
// taken 20 us a layer: the shards' smaller shapes are the stub's 8 x 100 us).
TEST(TorchAsyncTpReplay, EightWaySplitHidesTheCopiesUnderTheShardGemms) {
  const double c = 1e-4, e = 3e-6;
  const std::vector<AsyncTpUnit> units = {
      {.collective = CollectiveOp::all_gather, .gemm_s = 2e-5, .shard_gemm_s = c, .exposed_s = e},
      {.collective = CollectiveOp::reduce_scatter, .gemm_s = 2e-5, .shard_gemm_s = c, .exposed_s = e}};
  const auto run = replay_forward(8, units);
  ASSERT_EQ(run.copies_s.size(), 2u);
  const double m = copies_by_hand(8);  // 7 x 24 x (1.05 MB / 100 GB/s + 2 us) = 2.10 ms
  for (double copy : run.copies_s)
    EXPECT_NEAR(copy, m, 1e-3 * m);
  ASSERT_LT(m, 7 * kLayers * c);
  const double rest = run.forward_total_s - kLayers * 2 * 2e-5;
  ASSERT_GT(rest, 0);
  const double expected = rest + 2 * (kLayers * e + 8 * kLayers * c);
  EXPECT_NEAR(run.forward_end_s, expected, 1e-6 * expected);
}

}  // namespace
}  // namespace trainsim::sim
