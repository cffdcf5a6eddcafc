// Imbalanced expert routing in the task graph (model.moe.routing, dropless,
// ep > 1): MoE ops split per layer with an all-to-all after each MoE layer,
// each GPU's pieces carrying what its experts' load adds, the all-to-alls
// moving each rank's tokens by the receivers' loads; a capacity factor pads
// the imbalance away; and the cost models' extra time against closed forms.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <map>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::workloads {
namespace {

// 4 MoE layers of 4 experts (top-1) on ep 4: rank r holds expert r. The
// measured loads 6:2:0:0 give load factors 3, 1, 0, 0.
ModelSpec skewed_moe() {
  ModelSpec m = testing::small_moe_model(4, 4, 1, 2048);
  m.moe.routing.kind = RoutingKind::measured;
  m.moe.routing.measured = {{.layer = -1, .tokens = {6, 2, 0, 0}}};
  return m;
}

ParallelPlan plan_of(int dp, int ep, int micro_batches) {
  return ParallelPlan{.dp = dp, .ep = ep, .micro_batch_size = 1, .global_batch_size = micro_batches * dp};
}

TaskGraph build(const ModelSpec& m, const ParallelPlan& plan) {
  return testing::iteration_on_one_node(m, plan);
}

std::vector<const Task*> tasks_of(const TaskGraph& g, CommKind comm) {
  std::vector<const Task*> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].comm == comm)
      out.push_back(&g[v]);
  return out;
}

TEST(ExpertImbalanceGraph, EveryMoeLayerOfAnOpExchangesOnItsOwn) {
  const ModelSpec m = skewed_moe();
  const auto g = build(m, plan_of(4, 4, 2));
  // Per micro-batch: forward and backward, 4 layers each, one all-to-all of
  // 2 passes per layer (dispatch and combine, or their gradients).
  std::map<int, int> per_micro_batch;
  for (const Task* t : tasks_of(g, CommKind::ep)) {
    EXPECT_EQ(t->fold, 2);
    EXPECT_GE(t->layer, 0);
    EXPECT_GE(t->exchange, 0);
    ++per_micro_batch[t->micro_batch];
  }
  ASSERT_EQ(per_micro_batch.size(), 2u);
  for (const auto& [mb, n] : per_micro_batch)
    EXPECT_EQ(n, 2 * 4) << "micro-batch " << mb;
}

TEST(ExpertImbalanceGraph, AllToAllBytesFollowTheReceiversLoads) {
  const ModelSpec m = skewed_moe();
  const ParallelPlan plan = plan_of(4, 4, 1);
  const auto g = build(m, plan);
  const double b = ep_all_to_all_bytes(m, plan);  // each rank's copies, 2 s top_k h
  // One layer's dispatch and combine from rank i to rank j: b (f_i + f_j) / 4
  // with f = 3, 1, 0, 0.
  const std::vector<double> f{3, 1, 0, 0};
  const Task* one = tasks_of(g, CommKind::ep).front();
  const auto& send = g.exchanges.at(static_cast<std::size_t>(one->exchange)).send_bytes;
  ASSERT_EQ(send.size(), 16u);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      EXPECT_DOUBLE_EQ(send[i * 4 + j], i == j ? 0.0 : b * (f[i] + f[j]) / 4) << i << " -> " << j;
  // Rank 0 sends 2.5 b in all, rank 3 b: the balanced 1.5 b each (b x 2 x 3 / 4) redistributed.
  double total = 0;
  for (double x : send)
    total += x;
  EXPECT_DOUBLE_EQ(total, 4 * 1.5 * b);
  // Loads are per layer: every micro-batch's and group's all-to-all of a
  // layer shares one table (forward and backward move the same bytes).
  EXPECT_EQ(g.exchanges.size(), 4u);
}

TEST(ExpertImbalanceGraph, EachGpusMoePiecesCarryWhatItsExpertsLoadAdds) {
  const ModelSpec m = skewed_moe();
  const ParallelPlan plan = plan_of(4, 4, 1);
  const auto g = build(m, plan);
  const AnalyticCostModel cost(m, plan, 0.5);
  const auto gpu = testing::uniform_cluster(1, 4, 100e9, 1e-6).gpu_of(0);
  const std::vector<double> f{3, 1, 0, 0};
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind != TaskKind::forward)
      continue;
    EXPECT_GE(t.layer, 0);  // one piece per layer
    EXPECT_DOUBLE_EQ(t.imbalance_s,
                     cost.moe_load_extra_s(PipeOpKind::forward, f[static_cast<std::size_t>(t.gpu)], gpu));
  }
  // The analytic extra: (f - 1) x the GPU's expert GEMM FLOPs at the model's rate.
  const double expert_flops = 2.0 * 1024 * 1 * 3 * 1024 * 2048;  // 2 tokens top_k (3 h f)
  EXPECT_DOUBLE_EQ(cost.moe_load_extra_s(PipeOpKind::forward, 3, gpu),
                   2 * expert_flops / (gpu.peak_bf16_flops * 0.5));
  EXPECT_DOUBLE_EQ(cost.moe_load_extra_s(PipeOpKind::backward, 0, gpu),
                   -2 * expert_flops / (gpu.peak_bf16_flops * 0.5));
}

TEST(ExpertImbalanceGraph, ModelFlopsStillSumToTheAnalyticTotal) {
  const ModelSpec m = skewed_moe();
  const ParallelPlan plan = plan_of(4, 4, 2);
  const auto g = build(m, plan);
  double flops = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    flops += g[v].model_flops;
  EXPECT_NEAR(flops / m.iteration_model_flops(plan.global_batch_size), 1.0, 1e-12);
}

TEST(ExpertImbalanceGraph, ACapacityFactorPadsTheImbalanceAwayAndBalancedRoutingChangesNothing) {
  ModelSpec balanced = skewed_moe();
  balanced.moe.routing = {};
  ModelSpec capped = skewed_moe();
  capped.moe.dropless = false;  // capacity 1: every expert padded or cut to the balanced load
  const ParallelPlan plan = plan_of(4, 4, 2);
  EXPECT_EQ(graph_fingerprint(build(capped, plan)), graph_fingerprint(build(balanced, plan)));
  // Dropless skewed routing does change the graph.
  EXPECT_NE(graph_fingerprint(build(skewed_moe(), plan)), graph_fingerprint(build(balanced, plan)));
  // Without expert parallelism nothing waits for anyone: the graph is the balanced one.
  EXPECT_EQ(graph_fingerprint(build(skewed_moe(), plan_of(4, 1, 2))),
            graph_fingerprint(build(balanced, plan_of(4, 1, 2))));
}

TEST(ExpertImbalanceGraph, PerOpModelRetimesTheExpertKernelsAtTheLoad) {
  // Mixtral's layer width (the small test model's passes are bound by
  // kernel launches, which the experts' load does not change).
  ModelSpec m = skewed_moe();
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.seq_len = 4096;
  m.ffn_hidden = m.moe.expert_ffn_hidden = 14336;
  const ParallelPlan plan = plan_of(4, 4, 1);
  const PerOpCostModel cost(m, plan);
  const auto gpu = *platforms::find_gpu("H100-SXM");
  EXPECT_EQ(cost.moe_load_extra_s(PipeOpKind::forward, 1, gpu), 0);
  const double light = cost.moe_load_extra_s(PipeOpKind::forward, 0.5, gpu);
  const double heavy = cost.moe_load_extra_s(PipeOpKind::forward, 2, gpu);
  const double heavier = cost.moe_load_extra_s(PipeOpKind::forward, 3, gpu);
  EXPECT_LT(light, 0);
  EXPECT_GT(heavy, 0);
  EXPECT_GT(heavier, heavy);
  // The whole backward is its input and weight gradients.
  EXPECT_NEAR(cost.moe_load_extra_s(PipeOpKind::backward, 2, gpu),
              cost.moe_load_extra_s(PipeOpKind::backward_input, 2, gpu) +
                  cost.moe_load_extra_s(PipeOpKind::backward_weight, 2, gpu),
              1e-15);
}

}  // namespace
}  // namespace trainsim::workloads
