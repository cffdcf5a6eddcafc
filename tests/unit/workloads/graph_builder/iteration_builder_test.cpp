#include <gtest/gtest.h>

#include <boost/graph/topological_sort.hpp>
#include <map>

#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

struct Built {
  ModelSpec model;
  ParallelPlan plan;
  TaskGraph graph;
};

Built build(int dp, int tp, int pp, int m, ScheduleKind schedule = ScheduleKind::one_f_one_b, int v = 1) {
  Built b{*find_model_preset("gpt3-1.3b"), {}, {}};
  b.plan = ParallelPlan{.dp = dp, .tp = tp, .pp = pp, .micro_batch_size = 1, .global_batch_size = m * dp};
  b.plan.schedule = schedule;
  b.plan.virtual_stages = v;
  const auto cluster = testing::uniform_cluster(1, dp * tp * pp, 100e9, 1e-6);
  b.graph = build_iteration(b.model, b.plan, cluster, testing::FixedCostModel(1, 2));
  return b;
}

TEST(IterationBuilder, CreatesEveryTaskOfThePlanOnce) {
  const auto b = build(2, 2, 2, 4);
  std::map<TaskKind, int> count;
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies())))
    count[b.graph[v].kind]++;
  EXPECT_EQ(count[TaskKind::forward], 8 * 4);  // every GPU, every micro-batch
  EXPECT_EQ(count[TaskKind::backward], 8 * 4);
  EXPECT_EQ(count[TaskKind::optimizer], 8);
  EXPECT_EQ(count[TaskKind::send], 2 * 2 * 1 * 2 * 4);  // dp x tp x boundaries x both ways x m
  // TP per op per (dp, stage) + DP per (stage, tp) + the tied embedding's
  // all-reduce between the two stages per (dp, tp) (tied_embedding_sync.cpp).
  EXPECT_EQ(count[TaskKind::collective], 2 * 2 * 8 + 2 * 2 + 2 * 2);
}

TEST(IterationBuilder, GraphIsAcyclic) {
  const auto b = build(2, 2, 4, 8);
  std::vector<TaskId> order;
  EXPECT_NO_THROW(boost::topological_sort(b.graph.dependencies(), std::back_inserter(order)));
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
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies()))) {
    const auto& t = b.graph[v];
    // The other collectives: the tied embedding's all-reduce between the
    // stages (TiedEmbeddingSync.*).
    if (t.kind != TaskKind::collective || t.comm == CommKind::pp)
      continue;
    EXPECT_EQ(t.comm, CommKind::dp);
    EXPECT_DOUBLE_EQ(t.bytes, 2 * stage_parameters_per_gpu(b.model, b.plan, t.stage));
    EXPECT_EQ(b.graph.groups[t.group].size(), 2u);
  }
}

std::map<TaskKind, int> count_kinds(const TaskGraph& g) {
  std::map<TaskKind, int> count;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    count[g[v].kind]++;
  return count;
}

// 8 virtual stages over 4 ranks: 7 boundaries, each between two ranks, each
// crossed once each way per micro-batch.
TEST(IterationBuilder, InterleavedChunksSendAtEveryVirtualStageBoundary) {
  const auto b = build(1, 1, 4, 8, ScheduleKind::interleaved_one_f_one_b, 2);
  const auto count = count_kinds(b.graph);
  EXPECT_EQ(count.at(TaskKind::forward), 4 * 2 * 8);
  EXPECT_EQ(count.at(TaskKind::send), 7 * 2 * 8);
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies()))) {
    const auto& t = b.graph[v];
    if (t.kind == TaskKind::send) {
      EXPECT_EQ(t.peer, (t.gpu + (t.transfer == TransferKind::activation ? 1 : 3)) % 4);
    }
  }
}

// In a V the two middle virtual stages sit on the last rank: that boundary
// hands over in memory, the other 6 are transfers.
TEST(IterationBuilder, VShapeTurnOnOneRankNeedsNoTransfer) {
  const auto b = build(1, 1, 4, 8, ScheduleKind::zb_v, 2);
  EXPECT_EQ(count_kinds(b.graph).at(TaskKind::send), 6 * 2 * 8);
  std::vector<TaskId> order;
  EXPECT_NO_THROW(boost::topological_sort(b.graph.dependencies(), std::back_inserter(order)));
}

TEST(IterationBuilder, EmbeddingOnTheFirstVirtualStageLogitsOnTheLast) {
  auto model = *find_model_preset("gpt3-1.3b");
  model.tied_embeddings = false;  // give the logits their own parameters
  ParallelPlan plan{.pp = 4};
  plan.schedule = ScheduleKind::interleaved_one_f_one_b;
  plan.virtual_stages = 2;
  const double layers = 3 * model.layer_parameters();  // 24 layers / 8 virtual stages, 2 chunks per rank
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(model, plan, 0), 2 * layers + model.embedding_parameters());
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(model, plan, 1), 2 * layers);
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(model, plan, 3), 2 * layers + model.logits_parameters());
  EXPECT_TRUE(virtual_stage_slice(model, plan, 7).logits);
  EXPECT_EQ(virtual_stage_slice(model, plan, 5).layers, 3);
  plan.schedule = ScheduleKind::zb_v;  // the V brings the last virtual stage back to rank 0
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(model, plan, 0),
                   2 * layers + model.embedding_parameters() + model.logits_parameters());
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(model, plan, 3), 2 * layers);
}

// Zero-bubble split: the input gradient carries the backward's TP
// all-reduces, the weight gradient none; the DP all-reduce follows each
// GPU's last op, a weight gradient.
TEST(IterationBuilder, SplitBackwardKeepsTpAllReducesOnTheInputGradient) {
  const auto b = build(2, 2, 4, 8, ScheduleKind::zb_h1);
  const auto count = count_kinds(b.graph);
  const int layers = b.model.layers / 4;
  int tp_collectives = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies()))) {
    const auto& t = b.graph[v];
    if (t.kind == TaskKind::collective && t.comm == CommKind::tp) {
      ++tp_collectives;
      EXPECT_EQ(t.fold, 2 * layers);
      for (auto e :
           boost::make_iterator_range(boost::in_edges(workloads::task_vertex(v), b.graph.dependencies())))
        EXPECT_NE(b.graph[boost::source(e, b.graph.dependencies())].kind, TaskKind::backward_weight);
    }
    if (t.kind == TaskKind::collective && t.comm == CommKind::dp && t.stage > 0)
      for (auto e :
           boost::make_iterator_range(boost::in_edges(workloads::task_vertex(v), b.graph.dependencies()))) {
        const auto& before = b.graph[boost::source(e, b.graph.dependencies())];
        EXPECT_EQ(before.kind, TaskKind::backward_weight);
        EXPECT_EQ(before.micro_batch, 7);
      }
  }
  // Per (dp, rank) pair of TP ranks: one collective per F, B and I; none per W.
  const int ops_with_collectives =
      (count.at(TaskKind::forward) + count.at(TaskKind::backward) + count.at(TaskKind::backward_input)) / 2;
  EXPECT_EQ(tp_collectives, ops_with_collectives);
  EXPECT_EQ(count.at(TaskKind::backward_weight), 2 * 2 * 3 * 8);  // dp x tp x stages 1..3 x m
}

TEST(IterationBuilder, RejectsPlansTheScheduleCannotRun) {
  EXPECT_THROW(build(1, 1, 4, 6, ScheduleKind::interleaved_one_f_one_b, 2), std::invalid_argument);
  EXPECT_THROW(build(1, 1, 4, 8, ScheduleKind::zb_v, 1), std::invalid_argument);
  EXPECT_THROW(build(1, 1, 4, 8, ScheduleKind::interleaved_one_f_one_b, 5),
               std::invalid_argument);  // 24 % 20
}

}  // namespace
}  // namespace trainsim::workloads
