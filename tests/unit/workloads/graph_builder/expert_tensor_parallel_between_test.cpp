// Expert tensor parallelism strictly between 1 and tp
// (plan.expert_tensor_parallel 2 with tp 4): the expert rank groups of
// Megatron-core's generator (order tp-ep-dp over a stage), the expert-TP
// all-gather and reduce-scatter around the experts (which group, how many,
// how many bytes), the TP collectives left around a MoE layer, the expert
// GEMM shapes, the gradient groups and the weights' memory, each against a
// hand count.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <map>
#include <set>

#include "support/small_moe.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/stage_slices.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {
namespace {

// 8 layers, 8 experts top-2, expert_ffn 2048, 1,024-token sequences,
// hidden 1024 (tests/support/small_moe.hpp).
ModelSpec between_moe_model() {
  return testing::small_moe_model(8, 8, 2, 2048);
}

// tp 4 with sequence parallelism, dp 2, ep 2, expert_tp 2 by default: a
// stage of 8 GPUs, expert-DP size 4 x 2 / (2 x 2) = 2.
ParallelPlan between_plan(int etp = 2, int micro_batches = 1, int zero_stage = 0) {
  return ParallelPlan{.dp = 2,
                      .tp = 4,
                      .pp = 1,
                      .ep = 2,
                      .etp = etp,
                      .micro_batch_size = 1,
                      .global_batch_size = micro_batches * 2,
                      .sequence_parallel = true,
                      .zero_stage = zero_stage};
}

std::vector<const Task*> collective_tasks_of(const TaskGraph& g, CommKind comm) {
  std::vector<const Task*> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].comm == comm && g[v].kind == TaskKind::collective)
      out.push_back(&g[v]);
  return out;
}

using EtpGroups = std::vector<std::vector<int>>;

TEST(ExpertTensorParallelBetween, GroupsFollowMegatronsExpertRankOrder) {
  // Expert rank = t + 2 (e + 2 q) over the stage's GPUs 0-7: expert-TP
  // groups {0, 1}, {2, 3}, {4, 5}, {6, 7}; EP groups (same t and q)
  // {0, 2}, {4, 6}, {1, 3}, {5, 7}; expert-DP groups (same t and e)
  // {0, 4}, {2, 6}, {1, 5}, {3, 7}.
  const ParallelPlan plan = between_plan();
  EXPECT_TRUE(plan.expert_tp_folded());
  EXPECT_EQ(plan.expert_data_parallel_size(), 2);
  EXPECT_EQ(expert_parallel_groups(plan, 0), (EtpGroups{{0, 2}, {4, 6}, {1, 3}, {5, 7}}));
  EXPECT_EQ(expert_data_parallel_groups(plan, 0), (EtpGroups{{0, 4}, {2, 6}, {1, 5}, {3, 7}}));
  EXPECT_EQ(expert_tensor_parallel_rank_of(plan, 5), 1);
  EXPECT_EQ(expert_parallel_rank_of(plan, 6), 1);
  const TaskGraph g = testing::iteration_on_one_node(between_moe_model(), plan);
  std::set<std::vector<int>> ep;
  for (const Task* t : collective_tasks_of(g, CommKind::ep))
    ep.insert(g.groups[static_cast<std::size_t>(t->group)]);
  EXPECT_EQ(ep, (std::set<std::vector<int>>{{0, 2}, {4, 6}, {1, 3}, {5, 7}}));
}

TEST(ExpertTensorParallelBetween, ExpertTpGroupsGatherAndScatterTheDispatchedTokensEveryMoeLayer) {
  const ModelSpec m = between_moe_model();
  const TaskGraph g = testing::iteration_on_one_node(m, between_plan(2, 3));
  // Each GPU dispatches its 1024 / 4 = 256 tokens x top-2 copies x 1024 x
  // 2 bytes = 1 MiB; the expert-TP all-gather's buffer (nccl-tests size)
  // holds the 2 members' = 2 MiB, the reduce-scatter's input the same.
  EXPECT_DOUBLE_EQ(ep_all_to_all_bytes(m, between_plan()), 256.0 * 2 * 1024 * 2);
  EXPECT_DOUBLE_EQ(expert_tp_collective_bytes(m, between_plan()), 2 * 256.0 * 2 * 1024 * 2);
  // Per expert-TP group and micro-batch: one all-gather and one
  // reduce-scatter per MoE layer forward (8) and backward (8).
  std::map<std::vector<int>, std::map<CollectiveOp, int>> passes;
  int tp_passes = 0;
  for (const Task* t : collective_tasks_of(g, CommKind::tp)) {
    const auto& members = g.groups[static_cast<std::size_t>(t->group)];
    if (members.size() == 4) {  // the dense TP groups {0-3}, {4-7}
      tp_passes += t->fold;
      continue;
    }
    EXPECT_DOUBLE_EQ(t->bytes, 2 * 256.0 * 2 * 1024 * 2);
    passes[members][t->op] += t->fold;
  }
  ASSERT_EQ(passes.size(), 4u);
  for (const std::vector<int>& group : EtpGroups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}) {
    EXPECT_EQ(passes[group][CollectiveOp::all_gather], 3 * 16) << group[0];
    EXPECT_EQ(passes[group][CollectiveOp::reduce_scatter], 3 * 16) << group[0];
  }
  // The dense TP groups keep only the attention's reduce-scatter and
  // all-gather: 2 groups x 3 micro-batches x 2 collectives x 8 layers x 2
  // passes (the MLP's pair is the expert-TP group's now).
  EXPECT_EQ(tp_passes, 2 * 3 * 2 * 8 * 2);
}

TEST(ExpertTensorParallelBetween, TheAllToAllWaitsForTheExpertTpReduceScatter) {
  const TaskGraph g = testing::iteration_on_one_node(between_moe_model(), between_plan());
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    if (g[v].comm != CommKind::ep)
      continue;
    bool after_scatter = false;
    for (auto e : boost::make_iterator_range(boost::in_edges(workloads::task_vertex(v), g.dependencies()))) {
      const Task& before = g[boost::source(e, g.dependencies())];
      after_scatter |= before.comm == CommKind::tp && before.op == CollectiveOp::reduce_scatter &&
                       g.groups[static_cast<std::size_t>(before.group)].size() == 2;
    }
    EXPECT_TRUE(after_scatter);
  }
}

TEST(ExpertTensorParallelBetween, OneAndTpRunNoExpertTpCollectives) {
  const ModelSpec m = between_moe_model();
  EXPECT_FALSE(has_expert_tp_collectives(m, between_plan(1)));
  EXPECT_FALSE(has_expert_tp_collectives(m, between_plan(4)));
  EXPECT_FALSE(has_expert_tp_collectives(m, between_plan(0)));
  EXPECT_TRUE(has_expert_tp_collectives(m, between_plan(2)));
  for (int etp : {0, 1, 4}) {
    ParallelPlan plan = between_plan(etp);
    if (etp == 1)
      plan.ep = 4;  // 1 x 4 divides the stage of 8
    const TaskGraph g = testing::iteration_on_one_node(m, plan);
    for (const Task* t : collective_tasks_of(g, CommKind::tp))
      EXPECT_EQ(g.groups[static_cast<std::size_t>(t->group)].size(), 4u) << etp;
  }
}

TEST(ExpertTensorParallelBetween, ExpertGradientsReduceOverTheExpertDataParallelGroups) {
  const ModelSpec m = between_moe_model();
  const ParallelPlan plan = between_plan();
  const TaskGraph g = testing::iteration_on_one_node(m, plan);
  // Each GPU: 8 layers x (8 experts / ep 2) experts of 3 x 1024 x 2048
  // weights split over expert_tp 2; the dense parameters / tp 4.
  const double experts = 8 * 4 * 3.0 * 1024 * 2048 / 2;
  EXPECT_DOUBLE_EQ(stage_expert_parameters_per_gpu(m, plan, 0), experts);
  const double dense = stage_parameters_per_gpu(m, plan, 0) - experts;
  std::map<std::vector<int>, double> bytes;
  for (const Task* t : collective_tasks_of(g, CommKind::dp))
    bytes[g.groups[static_cast<std::size_t>(t->group)]] += t->bytes;
  // Dense groups: each TP rank's 2 data-parallel GPUs {t, t + 4}.
  const std::map<std::vector<int>, double> expected{{{0, 4}, 2 * dense + 2 * experts},
                                                    {{1, 5}, 2 * dense + 2 * experts},
                                                    {{2, 6}, 2 * dense + 2 * experts},
                                                    {{3, 7}, 2 * dense + 2 * experts}};
  // The expert-DP groups {0, 4}, {2, 6}, {1, 5}, {3, 7} coincide with the
  // dense ones here (ep x etp = tp): both reductions land on each.
  EXPECT_EQ(bytes, expected);
  // Memory: expert weights / (ep x etp), Adam state of experts over the
  // expert-DP group only with ZeRO-1.
  const GpuMemoryModel memory(m, between_plan(2, 1, 1));
  EXPECT_DOUBLE_EQ(memory.expert_parameters(0), experts);
  EXPECT_NEAR(memory.resident(0)[MemoryKind::optimizer], 12 * dense / 2 + 12 * experts / 2, 1.0);
}

TEST(ExpertTensorParallelBetween, ExpertGradientGroupsCrossDenseOnesWhenEpTimesEtpExceedsTp) {
  // tp 4, dp 4, ep 4, expert_tp 2: stage 16 GPUs, expert rank t + 2 (e + 4 q),
  // expert-DP size 4 x 4 / 8 = 2: groups {t + 2e, t + 2e + 8}.
  ParallelPlan plan = between_plan();
  plan.dp = 4;
  plan.ep = 4;
  plan.global_batch_size = 4;
  EXPECT_EQ(expert_parallel_groups(plan, 0),
            (EtpGroups{{0, 2, 4, 6}, {8, 10, 12, 14}, {1, 3, 5, 7}, {9, 11, 13, 15}}));
  EXPECT_EQ(expert_data_parallel_groups(plan, 0),
            (EtpGroups{{0, 8}, {2, 10}, {4, 12}, {6, 14}, {1, 9}, {3, 11}, {5, 13}, {7, 15}}));
  const TaskGraph g = testing::iteration_on_one_node(between_moe_model(), plan);
  std::set<std::vector<int>> dp;
  for (const Task* t : collective_tasks_of(g, CommKind::dp))
    dp.insert(g.groups[static_cast<std::size_t>(t->group)]);
  // Dense: {t, t + 4, t + 8, t + 12} per TP rank t; experts: the 8 above.
  EXPECT_EQ(dp.size(), 4u + 8u);
  EXPECT_TRUE(dp.count({1, 5, 9, 13}));
  EXPECT_TRUE(dp.count({6, 14}));
}

TEST(ExpertTensorParallelBetween, ExpertsRunOnTheGatheredTokensAtFfnOverEtp) {
  const ModelSpec m = between_moe_model();
  // tp 4, ep 2, expert_tp 2: a GPU routes its own 1024 / 4 = 256 tokens;
  // after the dispatch and the expert-TP gather an expert runs 256 x 2
  // (etp) x 2 copies x 2 (ep) / 8 experts = 256 rows at 2048 / 2 (up: 2 x
  // 1024 with SwiGLU), its 4 local experts 1024 rows.
  const auto ops = moe_layer_ops(m, layer_setup(m, 1, 4, true, 2, false, MoeDispatcher::all_to_all, 2));
  EXPECT_DOUBLE_EQ(testing::op_named(ops, "router").m, 256);
  EXPECT_DOUBLE_EQ(testing::op_named(ops, "experts_up").m, 256);
  EXPECT_DOUBLE_EQ(testing::op_named(ops, "experts_up").n, 2 * 1024);
  EXPECT_DOUBLE_EQ(testing::op_named(ops, "experts_up").batch, 4);
  EXPECT_DOUBLE_EQ(testing::op_named(ops, "experts_down").k, 1024);
  // Expert FLOPs per GPU are those of expert_tp 4 and of 1: the work
  // divided over the stage however it is split.
  auto expert_flops = [&](int etp) {
    double f = 0;
    for (const auto& op :
         moe_layer_ops(m, layer_setup(m, 1, 4, true, 2, false, MoeDispatcher::all_to_all, etp)))
      f += op.name.rfind("experts_", 0) == 0 && op.kind != OpKind::elementwise ? op.flops : 0;
    return f;
  };
  EXPECT_DOUBLE_EQ(expert_flops(2), expert_flops(4));
  EXPECT_DOUBLE_EQ(expert_flops(2), expert_flops(1));
}

TEST(ExpertTensorParallelBetween, TaskGraphModelFlopsSumToTheAnalyticTotal) {
  const ModelSpec m = between_moe_model();
  const ParallelPlan plan = between_plan(2, 4);
  double flops = 0;
  const TaskGraph g = testing::iteration_on_one_node(m, plan);
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    flops += g[v].model_flops;
  EXPECT_NEAR(flops / m.iteration_model_flops(plan.global_batch_size), 1.0, 1e-12);
}

}  // namespace
}  // namespace trainsim::workloads
