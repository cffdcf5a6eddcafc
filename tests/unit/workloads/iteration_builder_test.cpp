#include <gtest/gtest.h>

#include <boost/graph/topological_sort.hpp>
#include <map>

#include "support/test_cluster.hpp"
#include "workloads/iteration_builder.hpp"

namespace trainsim::workloads {
namespace {

struct Built {
  ModelSpec model;
  ParallelPlan plan;
  TaskGraph graph;
};

Built build(int dp, int tp, int pp, int m) {
  Built b{*find_model_preset("gpt3-1.3b"), {}, {}};
  b.plan = ParallelPlan{.dp = dp, .tp = tp, .pp = pp, .micro_batch_size = 1, .global_batch_size = m * dp};
  const auto cluster = testing::uniform_cluster(1, dp * tp * pp, 100e9, 1e-6);
  b.graph = build_iteration(b.model, b.plan, cluster, testing::FixedCostModel(1, 2));
  return b;
}

TEST(IterationBuilder, CreatesEveryTaskOfThePlanOnce) {
  const auto b = build(2, 2, 2, 4);
  std::map<TaskKind, int> count;
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.graph))) count[b.graph[v].kind]++;
  EXPECT_EQ(count[TaskKind::forward], 8 * 4);    // every GPU, every micro-batch
  EXPECT_EQ(count[TaskKind::backward], 8 * 4);
  EXPECT_EQ(count[TaskKind::optimizer], 8);
  EXPECT_EQ(count[TaskKind::send], 2 * 2 * 1 * 2 * 4);     // dp x tp x boundaries x both ways x m
  EXPECT_EQ(count[TaskKind::collective], 2 * 2 * 8 + 2 * 2);  // TP per op per (dp, stage) + DP per (stage, tp)
}

TEST(IterationBuilder, GraphIsAcyclic) {
  const auto b = build(2, 2, 4, 8);
  std::vector<TaskId> order;
  EXPECT_NO_THROW(boost::topological_sort(b.graph.graph, std::back_inserter(order)));
}

TEST(IterationBuilder, RanksFollowMegatronOrderTensorFastestThenDataThenPipeline) {
  const ParallelPlan plan{.dp = 2, .tp = 4, .pp = 2};
  EXPECT_EQ(plan.gpu_of(0, 0, 3), 3);
  EXPECT_EQ(plan.gpu_of(0, 1, 0), 4);
  EXPECT_EQ(plan.gpu_of(1, 0, 0), 8);
  EXPECT_EQ(plan.pp_rank_of(13), 1);
  EXPECT_EQ(plan.dp_rank_of(13), 1);
  EXPECT_EQ(plan.tp_rank_of(13), 1);
}

TEST(IterationBuilder, DataParallelAllReduceCarriesTheStageGradients) {
  const auto b = build(2, 1, 2, 2);
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.graph))) {
    const auto& t = b.graph[v];
    if (t.kind != TaskKind::collective) continue;
    EXPECT_EQ(t.comm, CommKind::dp);
    EXPECT_DOUBLE_EQ(t.bytes, 2 * stage_parameters_per_gpu(b.model, b.plan, t.stage));
    EXPECT_EQ(b.graph.groups[t.group].size(), 2u);
  }
}

}  // namespace
}  // namespace trainsim::workloads
