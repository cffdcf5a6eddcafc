// Heterogeneous plans replayed by SimGrid on a free network, against closed
// forms: uneven micro-batch shares make the DP gradient all-reduce wait for
// the replica with the most micro-batches; an uneven layer partition makes
// each stage's ops take its layers' share of the model.
#include <gtest/gtest.h>

#include "analysis/summary.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::sim {
namespace {

TEST(HeteroReplay, SlowestShareSetsTheIterationTimeOfEveryReplica) {
  // pp 2, dp 2, shares 5 and 3: a 1F1B pipeline of m micro-batches takes
  // (m + p - 1)(t_F + t_B); the all-reduce after it waits for m = 5.
  const double t_f = 1e-3, t_b = 2e-3;
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 24;
  workloads::ParallelPlan plan{.dp = 2, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 8};
  plan.dp_micro_batches = {5, 3};
  auto cluster = testing::free_network_cluster(4);
  cluster.collectives.launch_latency_s = 0;
  const auto graph = workloads::build_iteration(model, plan, cluster, testing::FixedCostModel(t_f, t_b));
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  const auto summary = analysis::summarize(graph, timeline, model, plan, cluster);
  const double expected = (5 + 2 - 1) * (t_f + t_b);
  EXPECT_NEAR(summary.iteration_time_s, expected, 1e-6 * expected);
  // Every sequence of the global batch counts, whoever ran it.
  EXPECT_DOUBLE_EQ(summary.tokens_per_iteration, 8.0 * model.seq_len);
  EXPECT_NEAR(summary.tokens_per_s, 8.0 * model.seq_len / summary.iteration_time_s,
              1e-9 * summary.tokens_per_s);
  // The replica with 3 micro-batches idles for the 2 it does not run.
  for (const auto& gpu : summary.gpus) {
    if (plan.dp_rank_of(gpu.gpu) == 1) {
      EXPECT_NEAR(gpu.compute_s, 3 * (t_f + t_b), 1e-9);
    }
  }
}

TEST(HeteroReplay, OneMicroBatchThroughAnUnevenPipelineTakesTheSumOfItsStages) {
  // m = 1: F0, F1, B1, B0 run one after the other, then the optimizer; with
  // the analytic model each stage's compute is its layers' FLOPs. Untied:
  // the sum leaves out the first / last stage embedding all-reduce a tied
  // model adds before the optimizer steps (TiedEmbeddingSyncReplay.* pins it).
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 24;
  model.tied_embeddings = false;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 1};
  plan.stage_layers = {18, 6};
  auto cluster = testing::free_network_cluster(2);
  const workloads::AnalyticCostModel cost(model, plan, 0.5);
  const auto graph = workloads::build_iteration(model, plan, cluster, cost);
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  const auto summary = analysis::summarize(graph, timeline, model, plan, cluster);

  const auto& gpu = cluster.gpu_of(0);
  const double peak = gpu.peak_bf16_flops * 0.5;
  const double layer_fb = 3 * model.layer_forward_flops(1) / peak;  // forward + backward of a layer
  const double logits_fb = 3 * model.logits_forward_flops(1) / peak;
  const double stage0 = 18 * layer_fb, stage1 = 6 * layer_fb + logits_fb;
  const double optimizer0 =
      cost.optimizer(workloads::stage_parameters_per_gpu(model, plan, 0), gpu).duration_s;
  const double optimizer1 =
      cost.optimizer(workloads::stage_parameters_per_gpu(model, plan, 1), gpu).duration_s;
  const double expected = stage0 + stage1 + optimizer0;
  EXPECT_NEAR(summary.iteration_time_s, expected, 1e-9 * expected);
  // The compute stream runs the stage's forward, backward and optimizer step.
  EXPECT_NEAR(summary.gpus[0].compute_s, stage0 + optimizer0, 1e-9 * stage0);
  EXPECT_NEAR(summary.gpus[1].compute_s, stage1 + optimizer1, 1e-9 * stage1);
}

}  // namespace
}  // namespace trainsim::sim
