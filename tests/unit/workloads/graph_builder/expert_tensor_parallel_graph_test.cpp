// Expert tensor parallelism below tp (plan.expert_tensor_parallel 1,
// Megatron's MoE parallel folding): the EP and expert data-parallel groups
// as Megatron-core's expert rank generator forms them (order tp-ep-dp-pp
// over a stage's tp x cp x dp GPUs), the all-to-all and gradient bytes, the
// TP collectives left around a MoE layer, the experts' GEMM shapes and the
// memory of their weights, each against a hand count.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <map>
#include <set>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/stage_slices.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {
namespace {

// 8 layers, 8 experts top-2 (tests/support/small_moe.hpp).
ModelSpec small_moe() {
  return testing::small_moe_model(8, 8, 2, 2048);
}

ParallelPlan folded_plan(int tp, int dp, int pp, int ep, int etp, int micro_batches, int zero_stage = 0) {
  return ParallelPlan{.dp = dp,
                      .tp = tp,
                      .pp = pp,
                      .ep = ep,
                      .etp = etp,
                      .micro_batch_size = 1,
                      .global_batch_size = micro_batches * dp,
                      .sequence_parallel = tp > 1,
                      .zero_stage = zero_stage};
}

TaskGraph build(const ModelSpec& m, const ParallelPlan& plan) {
  return testing::iteration_on_one_node(m, plan);
}

std::vector<const Task*> tasks_of(const TaskGraph& g, CommKind comm) {
  std::vector<const Task*> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].comm == comm && g[v].kind == TaskKind::collective)
      out.push_back(&g[v]);
  return out;
}

std::set<std::vector<int>> groups_of(const TaskGraph& g, CommKind comm) {
  std::set<std::vector<int>> out;
  for (const Task* t : tasks_of(g, comm))
    out.insert(g.groups[static_cast<std::size_t>(t->group)]);
  return out;
}

TEST(ExpertTensorParallelLayout, FoldedEpGroupsAreConsecutiveRanksOfTheStageSpanningTp) {
  // tp 2, dp 4, pp 2, ep 4, expert_tp 1: stage 0 is GPUs 0-7 (rank =
  // tp_rank + 2 dp_rank), stage 1 GPUs 8-15. Megatron's expert generator
  // (tp 1, ep 4, dp 2): EP groups {0-3}, {4-7}; expert-DP groups {0, 4},
  // {1, 5}, {2, 6}, {3, 7}.
  const ParallelPlan plan = folded_plan(2, 4, 2, 4, 1, 2);
  EXPECT_EQ(plan.expert_data_parallel_size(), 2);
  using G = std::vector<std::vector<int>>;
  EXPECT_EQ(expert_parallel_groups(plan, 0), (G{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(expert_parallel_groups(plan, 1), (G{{8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(expert_data_parallel_groups(plan, 0), (G{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(expert_parallel_rank_of(plan, 6), 2);
  EXPECT_EQ(expert_parallel_rank_of(plan, 13), 1);
  const TaskGraph g = build(small_moe(), plan);
  EXPECT_EQ(groups_of(g, CommKind::ep),
            (std::set<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
}

TEST(ExpertTensorParallelLayout, ExpertTpEqualToTpKeepsTheDataParallelEpGroups) {
  // Without folding (the key left out, or equal to tp) an EP group is ep
  // consecutive data-parallel ranks of one TP rank: tp 2, dp 4, ep 2 ->
  // TP rank 0: {0, 2}, {4, 6}; TP rank 1: {1, 3}, {5, 7}.
  for (int etp : {0, 2}) {
    const ParallelPlan plan = folded_plan(2, 4, 1, 2, etp, 2);
    using G = std::vector<std::vector<int>>;
    EXPECT_EQ(expert_parallel_groups(plan, 0), (G{{0, 2}, {4, 6}, {1, 3}, {5, 7}})) << etp;
    EXPECT_EQ(expert_data_parallel_groups(plan, 0), (G{{0, 4}, {2, 6}, {1, 5}, {3, 7}})) << etp;
    EXPECT_EQ(plan.expert_data_parallel_size(), 2);
  }
}

TEST(ExpertTensorParallelGraph, FoldedAllToAllsMoveEachRanksSequenceParallelTokens) {
  const ModelSpec m = small_moe();
  const ParallelPlan plan = folded_plan(2, 4, 1, 8, 1, 3);
  const TaskGraph g = build(m, plan);
  std::map<std::pair<int, int>, int> passes;
  for (const Task* t : tasks_of(g, CommKind::ep)) {
    // Each rank's b s / tp tokens, top_k copies of h in bf16: 2 x 1024 / 2 x 2 x 1024.
    EXPECT_DOUBLE_EQ(t->bytes, 2.0 * 1024 / 2 * 2 * 1024);
    passes[{t->group, t->micro_batch}] += t->fold;
  }
  ASSERT_EQ(passes.size(), 3u);  // one EP group (all 8 GPUs), 3 micro-batches
  for (const auto& [key, n] : passes)
    EXPECT_EQ(n, 4 * m.layers);
}

TEST(ExpertTensorParallelGraph, FoldedMoeLayersWithoutSharedExpertsKeepOnlyTheAttentionsTpCollectives) {
  const ModelSpec m = small_moe();
  auto tp_passes = [&](int etp) {
    int passes = 0;
    for (const Task* t : tasks_of(build(m, folded_plan(2, 2, 1, 2, etp, 1)), CommKind::tp))
      passes += t->fold;
    return passes;
  };
  // Per TP group (2: one per data-parallel replica) and micro-batch, the
  // reduce-scatter and all-gather of 2 per layer forward and 2 backward,
  // each folded: 2 replicas x 2 collectives x 4 x 8 layers; folded MoE
  // layers (all 8) keep half.
  EXPECT_EQ(tp_passes(2), 2 * 2 * 4 * 8);
  EXPECT_EQ(tp_passes(1), 2 * 2 * 2 * 8);
  // A shared expert runs on the dense TP group: its collectives stay.
  ModelSpec shared = m;
  shared.moe.shared_experts = 1;
  int folded = 0;
  for (const Task* t : tasks_of(build(shared, folded_plan(2, 2, 1, 2, 1, 1)), CommKind::tp))
    folded += t->fold;
  EXPECT_EQ(folded, 2 * 2 * 4 * 8);
}

TEST(ExpertTensorParallelGraph, FoldedExpertGradientsReduceOverGroupsCrossingTpRanks) {
  const ModelSpec m = small_moe();
  // tp 2, dp 4, ep 4, expert_tp 1: expert-DP groups {0, 4}, {1, 5}, {2, 6},
  // {3, 7}; the dense DP groups are each TP rank's 4 GPUs.
  const ParallelPlan plan = folded_plan(2, 4, 1, 4, 1, 2);
  const TaskGraph g = build(m, plan);
  // Hand count: each GPU holds 8 layers x (8 experts / 4) full experts of
  // 3 x 1024 x 2048 weights (no TP split), and the dense parameters / 2.
  const double experts = 8 * 2 * 3.0 * 1024 * 2048;
  EXPECT_DOUBLE_EQ(stage_expert_parameters_per_gpu(m, plan, 0), experts);
  const double dense = stage_parameters_per_gpu(m, plan, 0) - experts;
  std::map<std::vector<int>, double> bytes;
  for (const Task* t : tasks_of(g, CommKind::dp)) {
    EXPECT_EQ(t->op, CollectiveOp::all_reduce);
    bytes[g.groups[static_cast<std::size_t>(t->group)]] += t->bytes;
  }
  const std::map<std::vector<int>, double> expected{{{0, 2, 4, 6}, 2 * dense}, {{1, 3, 5, 7}, 2 * dense},
                                                    {{0, 4}, 2 * experts},     {{1, 5}, 2 * experts},
                                                    {{2, 6}, 2 * experts},     {{3, 7}, 2 * experts}};
  EXPECT_EQ(bytes, expected);
}

TEST(ExpertTensorParallelGraph, FoldedZeroOneShardsExpertStateOverTheExpertDataParallelGroup) {
  const ModelSpec m = small_moe();
  const ParallelPlan plan = folded_plan(2, 4, 1, 4, 1, 2, 1);
  const TaskGraph g = build(m, plan);
  int scatters = 0, gathers = 0;
  for (const Task* t : tasks_of(g, CommKind::dp)) {
    scatters += t->op == CollectiveOp::reduce_scatter;
    gathers += t->op == CollectiveOp::all_gather;
  }
  EXPECT_EQ(scatters, 2 + 4);  // a dense group per TP rank, 4 expert-DP groups
  EXPECT_EQ(gathers, 2 + 4);
  // Memory: expert optimizer state over expert_dp = 2 GPUs, dense over dp = 4.
  const GpuMemoryModel memory(m, plan);
  const double experts = memory.expert_parameters(0);
  const double dense = memory.parameters(0) - experts;
  EXPECT_DOUBLE_EQ(experts, 8 * 2 * 3.0 * 1024 * 2048);
  EXPECT_NEAR(memory.resident(0)[MemoryKind::optimizer], 12 * dense / 4 + 12 * experts / 2, 1.0);
}

TEST(ExpertTensorParallelGraph, FoldedTaskGraphModelFlopsSumToTheAnalyticTotal) {
  const ModelSpec m = small_moe();
  for (int etp : {0, 1}) {
    const ParallelPlan plan = folded_plan(2, 4, 2, 4, etp, 4);
    double flops = 0;
    const TaskGraph g = build(m, plan);
    for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
      flops += g[v].model_flops;
    EXPECT_NEAR(flops / m.iteration_model_flops(plan.global_batch_size), 1.0, 1e-12) << "etp " << etp;
  }
}

TEST(ExpertTensorParallelOps, FoldedExpertsRunFullWidthOnTheirShareOfTheSequenceParallelTokens) {
  const ModelSpec m = small_moe();
  // tp 2, ep 4, expert_tp 1: each GPU routes its 1024 / 2 tokens; an
  // expert gets 512 x 2 copies x 4 GPUs / 8 experts = 512 rows, at the full
  // expert_ffn 2048 (up: 2 x 2048 columns with SwiGLU). Without folding:
  // 1024 rows at 2048 / 2.
  const auto folded = moe_layer_ops(m, layer_setup(m, 1, 2, true, 4, false, MoeDispatcher::all_to_all, 1));
  EXPECT_DOUBLE_EQ(testing::op_named(folded, "experts_up").m, 512);
  EXPECT_DOUBLE_EQ(testing::op_named(folded, "experts_up").n, 2 * 2048);
  EXPECT_DOUBLE_EQ(testing::op_named(folded, "experts_up").batch, 2);
  EXPECT_DOUBLE_EQ(testing::op_named(folded, "router").m, 512);
  const auto plain = moe_layer_ops(m, layer_setup(m, 1, 2, true, 4, false, MoeDispatcher::all_to_all, 2));
  EXPECT_DOUBLE_EQ(testing::op_named(plain, "experts_up").m, 1024);
  EXPECT_DOUBLE_EQ(testing::op_named(plain, "experts_up").n, 2 * 1024);
  EXPECT_DOUBLE_EQ(testing::op_named(plain, "router").m, 1024);
  // The same FLOPs per GPU either way: half the rows at twice the width.
  double folded_flops = 0, plain_flops = 0;
  for (const auto& op : folded)
    folded_flops += op.name.rfind("experts_", 0) == 0 && op.kind != OpKind::elementwise ? op.flops : 0;
  for (const auto& op : plain)
    plain_flops += op.name.rfind("experts_", 0) == 0 && op.kind != OpKind::elementwise ? op.flops : 0;
  EXPECT_DOUBLE_EQ(folded_flops, plain_flops);
}

}  // namespace
}  // namespace trainsim::workloads
