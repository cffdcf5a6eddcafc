// The tied embedding's gradient all-reduce between the first and the last
// pipeline stage (workloads/graph_builder/tied_embedding_sync.cpp): one
// collective per (dp, cp, tp) position, over the two GPUs holding the
// embedding and the output layer, carrying the TP rank's vocab / tp x hidden
// shard in the gradient's dtype, after both GPUs' gradient synchronisation
// and before both optimizer steps; absent without ties, without a pipeline
// and when DualPipe-V's V ends the model on the first rank.
#include <gtest/gtest.h>

#include <boost/range/iterator_range.hpp>
#include <set>
#include <vector>

#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/plan_checks.hpp"

namespace trainsim::workloads {
namespace {

TaskGraph build_for(const ModelSpec& model, const ParallelPlan& plan) {
  EXPECT_TRUE(plan_problems(model, plan).empty());
  const auto cluster = testing::uniform_cluster(1, plan.gpu_count(), 100e9, 1e-6);
  return build_iteration(model, plan, cluster, testing::FixedCostModel(1, 2));
}

std::vector<TaskId> tied_syncs(const TaskGraph& g) {
  std::vector<TaskId> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].kind == TaskKind::collective && g[v].comm == CommKind::pp)
      out.push_back(v);
  return out;
}

ParallelPlan pipelined(int dp, int tp, int pp) {
  ParallelPlan plan{.dp = dp, .tp = tp, .pp = pp, .micro_batch_size = 1, .global_batch_size = 8 * dp};
  return plan;
}

TEST(TiedEmbeddingSync, AllReducesTheTpShardOfTheEmbeddingGradientBetweenTheFirstAndLastStage) {
  const auto model = *find_model_preset("gpt3-1.3b");
  ASSERT_TRUE(model.tied_embeddings);
  for (const int grad_bytes : {2, 4}) {
    auto plan = pipelined(2, 2, 4);
    plan.zero_stage = 1;
    plan.grad_bytes = grad_bytes;
    const auto g = build_for(model, plan);
    const auto syncs = tied_syncs(g);
    // One per (dp, tp) position: dp 2 x tp 2.
    ASSERT_EQ(syncs.size(), 4u);
    std::set<std::pair<int, int>> pairs;
    for (TaskId id : syncs) {
      const Task& t = g[id];
      EXPECT_EQ(t.op, CollectiveOp::all_reduce);
      // vocab 51,200 x hidden 2,048 / tp 2, in the gradient's dtype.
      EXPECT_DOUBLE_EQ(t.bytes, 51200.0 * 2048 / 2 * grad_bytes);
      const auto& members = g.groups[static_cast<std::size_t>(t.group)];
      ASSERT_EQ(members.size(), 2u);
      const int first = members[0], last = members[1];
      EXPECT_EQ(plan.pp_rank_of(first), 0);
      EXPECT_EQ(plan.pp_rank_of(last), 3);
      EXPECT_EQ(plan.dp_rank_of(first), plan.dp_rank_of(last));
      EXPECT_EQ(plan.tp_rank_of(first), plan.tp_rank_of(last));
      pairs.emplace(first, last);
      // After the gradient reduction of both GPUs' DP groups (a DP
      // collective of stage 0 and of stage 3), before both optimizer steps.
      std::set<int> reduced_stages;
      for (auto [e, end] = boost::in_edges(workloads::task_vertex(id), g.dependencies()); e != end; ++e) {
        const Task& before = g[boost::source(*e, g.dependencies())];
        if (before.kind == TaskKind::collective && before.comm == CommKind::dp)
          reduced_stages.insert(before.stage);
      }
      EXPECT_EQ(reduced_stages, (std::set<int>{0, 3}));
      std::set<int> stepped;
      for (auto [e, end] = boost::out_edges(workloads::task_vertex(id), g.dependencies()); e != end; ++e) {
        const Task& after = g[boost::target(*e, g.dependencies())];
        EXPECT_EQ(after.kind, TaskKind::optimizer);
        stepped.insert(after.gpu);
      }
      EXPECT_EQ(stepped, (std::set<int>{first, last}));
    }
    EXPECT_EQ(pairs.size(), 4u);
  }
}

TEST(TiedEmbeddingSync, HoldsUnderFsdpAndWithoutDataParallelism) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto fsdp = pipelined(2, 1, 2);
  fsdp.zero_stage = 3;
  EXPECT_EQ(tied_syncs(build_for(model, fsdp)).size(), 2u);
  const auto g = build_for(model, pipelined(1, 1, 2));
  const auto syncs = tied_syncs(g);
  ASSERT_EQ(syncs.size(), 1u);
  // Without a DP reduction it follows each GPU's last task (its last
  // backward, or the blocking send that holds it).
  std::set<int> after_tasks_of;
  for (auto [e, end] = boost::in_edges(workloads::task_vertex(syncs[0]), g.dependencies()); e != end; ++e)
    after_tasks_of.insert(g[boost::source(*e, g.dependencies())].gpu);
  EXPECT_EQ(after_tasks_of, (std::set<int>{0, 1}));
}

TEST(TiedEmbeddingSync, IsAbsentWithoutTiesWithoutAPipelineAndWhenTheVEndsOnTheFirstRank) {
  auto model = *find_model_preset("gpt3-1.3b");
  EXPECT_TRUE(tied_syncs(build_for(model, pipelined(2, 2, 1))).empty());
  auto v_shape = pipelined(1, 1, 2);
  v_shape.schedule = ScheduleKind::dualpipe_v;
  v_shape.virtual_stages = 2;
  EXPECT_TRUE(tied_syncs(build_for(model, v_shape)).empty());
  model.tied_embeddings = false;
  EXPECT_TRUE(tied_syncs(build_for(model, pipelined(2, 2, 4))).empty());
}

TEST(TiedEmbeddingSync, AnUntiedModelWithMultiTokenPredictionSyncsItsEmbeddingCopy) {
  auto model = *find_model_preset("gpt3-1.3b");
  model.tied_embeddings = false;
  EXPECT_TRUE(tied_syncs(build_for(model, pipelined(1, 1, 2))).empty());
  model.mtp_depth = 1;
  const auto g = build_for(model, pipelined(1, 1, 2));
  const auto syncs = tied_syncs(g);
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_DOUBLE_EQ(g[syncs[0]].bytes, 51200.0 * 2048 * 2);
}

// Megatron never all-reduces a decoder-only GPT's learned position table
// across stages: its position-embedding group is the first pipeline stage
// alone (parallel_state.default_position_embedding_ranks: [pp_ranks[0]]),
// so _allreduce_position_embedding_grads finds a group of one and skips;
// only encoder-decoder models split at pipeline_model_parallel_split_rank
// (removed in July 2025) had a second copy to sync. docs/parallelism.md
// cites the lines.
TEST(TiedEmbeddingSync, AGptWithLearnedPositionsAllReducesNoPositionTableAcrossStages) {
  auto model = *find_model_preset("gpt3-1.3b");
  ASSERT_TRUE(model.learned_positions);
  model.tied_embeddings = false;
  auto plan = pipelined(2, 2, 4);
  EXPECT_TRUE(tied_syncs(build_for(model, plan)).empty());
  plan.schedule = ScheduleKind::interleaved_one_f_one_b;
  plan.virtual_stages = 2;
  EXPECT_TRUE(tied_syncs(build_for(model, plan)).empty());
  // Tied, the one sync carries the word embedding alone: vocab / tp x
  // hidden, no seq_len x hidden position rows.
  model.tied_embeddings = true;
  const auto g = build_for(model, pipelined(1, 2, 4));
  const auto syncs = tied_syncs(g);
  ASSERT_EQ(syncs.size(), 2u);
  for (TaskId id : syncs)
    EXPECT_DOUBLE_EQ(g[id].bytes, 51200.0 * 2048 / 2 * 2);
}

}  // namespace
}  // namespace trainsim::workloads
