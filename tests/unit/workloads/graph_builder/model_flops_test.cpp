#include <gtest/gtest.h>

#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec gpt_22b() {
  auto m = *find_model_preset("gpt3-1.3b");
  m.layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn_hidden = 4 * 6144;
  return m;
}

// Narayanan et al. (SC21), eq. (3): 72 B s L h^2 (1 + s/6h + V/(12 L h)).
double megatron_model_flops(const ModelSpec& m, double global_batch) {
  const double s = m.seq_len, h = m.hidden, l = m.layers, v = m.vocab;
  return 72 * global_batch * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
}

TEST(ModelFlops, GptIterationMatchesNarayananClosedForm) {
  const auto m = gpt_22b();
  EXPECT_NEAR(m.iteration_model_flops(512) / megatron_model_flops(m, 512), 1.0, 1e-12);
}

TEST(ModelFlops, GptParameterCountMatchesClosedForm) {
  const auto m = *find_model_preset("gpt3-175b");
  const double h = m.hidden, l = m.layers, v = m.vocab, s = m.seq_len;
  const double closed = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h));
  // The closed form leaves out the final layer norm (2h).
  EXPECT_NEAR(m.parameter_count(), closed + 2 * h, 1.0);
  EXPECT_NEAR(m.parameter_count() / 1e9, 175, 1.5);
}

TEST(ModelFlops, LlamaPresetsHaveTheirPublishedSizes) {
  EXPECT_NEAR(find_model_preset("llama2-7b")->parameter_count() / 1e9, 6.74, 0.01);
  EXPECT_NEAR(find_model_preset("llama2-13b")->parameter_count() / 1e9, 13.0, 0.02);
  EXPECT_NEAR(find_model_preset("llama2-70b")->parameter_count() / 1e9, 69.0, 0.05);
}

TEST(ModelFlops, TaskGraphModelFlopsSumToTheIterationTotal) {
  const auto m = gpt_22b();
  ParallelPlan plan{.dp = 2, .tp = 2, .pp = 4, .micro_batch_size = 2, .global_batch_size = 32};
  plan.recompute = Recompute::full;
  const auto cluster = testing::uniform_cluster(2, 8, 100e9, 1e-6);
  const AnalyticCostModel cost(m, plan);
  const auto graph = build_iteration(m, plan, cluster, cost);
  double model = 0, hardware = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
    model += graph[v].model_flops;
    hardware += graph[v].hardware_flops;
  }
  EXPECT_NEAR(model / megatron_model_flops(m, 32), 1.0, 1e-9);
  // Full recomputation adds one forward of every layer (not of the logits):
  // 96 B s L h^2 (1 + s/6h + V/(16 L h)) in Narayanan et al.
  const double s = m.seq_len, h = m.hidden, l = m.layers, v = m.vocab;
  const double with_recompute = 96 * 32 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  EXPECT_NEAR(hardware / with_recompute, 1.0, 1e-9);
}

}  // namespace
}  // namespace trainsim::workloads

namespace trainsim::workloads {
namespace {

// Qi et al. (ZB): per layer B = s b h (24h + 8s), W = 24 s b h^2.
TEST(ModelFlops, SplitBackwardFollowsZeroBubbleCosts) {
  auto m = *find_model_preset("gpt3-1.3b");
  const ParallelPlan plan{.dp = 1, .tp = 1, .pp = 1, .micro_batch_size = 2, .global_batch_size = 2};
  const AnalyticCostModel cost(m, plan);
  const auto gpu = *platforms::find_gpu("A100");
  const StageSlice layer{.layers = 1};
  const double s = m.seq_len, h = m.hidden, b = 2;
  EXPECT_NEAR(cost.backward_input(layer, gpu).model_flops / (s * b * h * (24 * h + 8 * s)), 1.0, 1e-12);
  EXPECT_NEAR(cost.backward_weight(layer, gpu).model_flops / (24 * s * b * h * h), 1.0, 1e-12);
  EXPECT_NEAR(cost.backward_input(layer, gpu).duration_s + cost.backward_weight(layer, gpu).duration_s,
              cost.backward(layer, gpu).duration_s, 1e-15);
}

}  // namespace
}  // namespace trainsim::workloads
