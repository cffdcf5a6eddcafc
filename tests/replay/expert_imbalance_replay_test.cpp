// Imbalanced expert routing replayed by SimGrid against closed forms. Two
// GPUs, one expert each (ep 2), every layer routing 3 : 1 (measured loads):
// GPU 0's experts take 1.5x the balanced copies, GPU 1's 0.5x. On a free
// network GPU 0 never waits, so the iteration is the balanced one plus, per
// MoE layer and pass, what 1.5x adds; GPU 1 waits at each layer's
// all-to-all for the difference between the two loads, and that wait is
// blamed on expert imbalance. One TEST = one simulation.
#include <gtest/gtest.h>

#include "analysis/bubbles.hpp"
#include "analysis/critical_path.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::sim {
namespace {

using analysis::BubbleCause;
using workloads::PipeOpKind;

constexpr int kLayers = 4;

workloads::ModelSpec three_to_one() {
  workloads::ModelSpec m = *workloads::find_model_preset("mixtral-8x7b");
  m.layers = kLayers;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.seq_len = 2048;
  m.vocab = 8000;
  m.ffn_hidden = 4096;
  m.moe.experts = 2;
  m.moe.top_k = 1;
  m.moe.expert_ffn_hidden = 8192;
  m.moe.routing.kind = workloads::RoutingKind::measured;
  m.moe.routing.measured = {{.layer = -1, .tokens = {3, 1}}};
  return m;
}

TEST(ExpertImbalanceReplay, TheBusiestExpertGpuSetsThePaceAndTheOtherWaitsForItAsImbalance) {
  const workloads::ModelSpec model = three_to_one();
  const workloads::ParallelPlan plan{.dp = 2, .ep = 2, .micro_batch_size = 1, .global_batch_size = 2};
  const platforms::ClusterSpec cluster = testing::free_network_cluster(2);
  const workloads::AnalyticCostModel cost(model, plan, 0.5);
  const workloads::TaskGraph graph = workloads::build_iteration(model, plan, cluster, cost);
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const analysis::Timeline timeline = replay(graph, *zone);

  const auto& gpu = cluster.gpu_of(0);
  const workloads::StageSlice all{.layers = kLayers, .first_layer = 0, .embedding = true, .logits = true};
  double optimizer_s = 0;
  for (workloads::TaskId v = 0; v < graph.size(); ++v)
    if (graph[v].kind == workloads::TaskKind::optimizer && graph[v].gpu == 0)
      optimizer_s += graph[v].duration_s;
  const double balanced =
      cost.forward(all, gpu).duration_s + cost.backward(all, gpu).duration_s + optimizer_s;
  const double heavy = kLayers * (cost.moe_load_extra_s(PipeOpKind::forward, 1.5, gpu) +
                                  cost.moe_load_extra_s(PipeOpKind::backward, 1.5, gpu));
  const double light = kLayers * (cost.moe_load_extra_s(PipeOpKind::forward, 0.5, gpu) +
                                  cost.moe_load_extra_s(PipeOpKind::backward, 0.5, gpu));
  // By hand: the expert GEMMs of one layer's forward on one GPU are
  // 2 x 2048 tokens x 3 x 2048 x 8192 FLOPs at half the bf16 peak; the
  // backward twice that; 1.5x adds half, 0.5x takes half away.
  const double expert_forward_s = 2.0 * 2048 * 3 * 2048 * 8192 / (gpu.peak_bf16_flops * 0.5);
  EXPECT_NEAR(heavy, kLayers * 0.5 * 3 * expert_forward_s, 1e-12);
  EXPECT_NEAR(light, -heavy, 1e-12);

  constexpr double kTolerance_s = 1e-8;  // the free network's all-to-alls and all-reduce
  EXPECT_NEAR(timeline.end_s, balanced + heavy, kTolerance_s);

  const auto b = analysis::analyze_bubbles(graph, timeline, plan);
  ASSERT_TRUE(b.expert_imbalance_modelled);
  const auto cause = [&](int g, BubbleCause c) {
    return b.gpus[static_cast<std::size_t>(g)].cause_s[static_cast<std::size_t>(c)];
  };
  // GPU 1 waits at every layer's all-to-all for the difference of the two loads.
  EXPECT_NEAR(cause(1, BubbleCause::expert_imbalance), heavy - light, kTolerance_s);
  EXPECT_NEAR(cause(0, BubbleCause::expert_imbalance), 0, kTolerance_s);
  for (int g : {0, 1}) {
    EXPECT_NEAR(cause(g, BubbleCause::straggler), 0, kTolerance_s);
    EXPECT_NEAR(cause(g, BubbleCause::warmup_cooldown), 0, kTolerance_s);
  }
  // Re-timed with the experts at the balanced load: the balanced iteration.
  EXPECT_NEAR(b.balanced_routing_iteration_time_s, balanced, kTolerance_s);
  EXPECT_NEAR(b.reference_iteration_time_s, timeline.end_s, kTolerance_s);

  // The critical path runs through GPU 0's pieces; their extra is blamed on
  // the imbalance.
  const auto path = analysis::critical_path(graph, timeline);
  double imbalance_on_path = 0;
  for (const auto& blame : path.by_kind)
    if (blame.name == "expert imbalance")
      imbalance_on_path = blame.seconds;
  EXPECT_NEAR(imbalance_on_path, heavy, kTolerance_s);
}

}  // namespace
}  // namespace trainsim::sim
