// DualPipe in the task graph: each micro-batch runs only the stages of its
// direction (down: ranks 0 .. p - 1, up: ranks p - 1 .. 0), and the two
// copies of each stage (ranks r and p - 1 - r) sum their gradients before
// the optimizer step (workloads/graph_builder/dualpipe_copy_sync.cpp): one
// all-reduce per pair and (dp, cp, tp) position, over the two GPUs, of the
// gradients the optimizer steps on (the ZeRO shard), after both GPUs'
// data-parallel reduction and before both steps. No tied-embedding
// all-reduce: ranks 0 and p - 1 each hold an embedding and an output layer.
#include <gtest/gtest.h>

#include <boost/graph/topological_sort.hpp>
#include <boost/range/iterator_range.hpp>
#include <iterator>
#include <set>
#include <vector>

#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

ParallelPlan dualpipe_plan(int dp, int tp, int pp, int m) {
  ParallelPlan plan{.dp = dp, .tp = tp, .pp = pp, .micro_batch_size = 1, .global_batch_size = m * dp};
  plan.schedule = ScheduleKind::dualpipe;
  plan.virtual_stages = 2;
  return plan;
}

TaskGraph build_for(const ModelSpec& model, const ParallelPlan& plan) {
  EXPECT_TRUE(plan_problems(model, plan).empty());
  const auto cluster = testing::uniform_cluster(1, plan.gpu_count(), 100e9, 1e-6);
  return build_iteration(model, plan, cluster, testing::FixedCostModel(1, 2));
}

std::vector<TaskId> pipeline_collectives(const TaskGraph& g) {
  std::vector<TaskId> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].kind == TaskKind::collective && g[v].comm == CommKind::pp)
      out.push_back(v);
  return out;
}

TEST(DualPipeGraph, EachStagePairAllReducesTheGradientsOfItsTwoCopies) {
  const auto model = *find_model_preset("gpt3-1.3b");  // tied embeddings
  for (const int zero : {0, 1}) {
    auto plan = dualpipe_plan(2, 2, 4, 8);
    plan.zero_stage = zero;
    const auto g = build_for(model, plan);
    const auto syncs = pipeline_collectives(g);
    // Pairs (0, 3) and (1, 2), each at dp 2 x tp 2 positions; no tied sync.
    ASSERT_EQ(syncs.size(), 8u) << zero;
    std::set<std::pair<int, int>> pairs;
    for (TaskId id : syncs) {
      const Task& t = g[id];
      EXPECT_EQ(t.op, CollectiveOp::all_reduce);
      const auto& members = g.groups[static_cast<std::size_t>(t.group)];
      ASSERT_EQ(members.size(), 2u);
      const int a = members[0], b = members[1];
      const int r = plan.pp_rank_of(a);
      EXPECT_EQ(plan.pp_rank_of(b), 3 - r);
      EXPECT_EQ(plan.dp_rank_of(a), plan.dp_rank_of(b));
      EXPECT_EQ(plan.tp_rank_of(a), plan.tp_rank_of(b));
      pairs.emplace(a, b);
      // The rank's two stages' gradients (bf16), the DP shard under ZeRO 1.
      const double local = stage_parameters_per_gpu(model, plan, r) / (zero >= 1 ? 2 : 1);
      EXPECT_DOUBLE_EQ(t.bytes, local * 2);
      EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(model, plan, r),
                       stage_parameters_per_gpu(model, plan, 3 - r));
      // After both stages' DP reductions, before both optimizer steps.
      std::set<int> reduced_stages;
      for (auto [e, end] = boost::in_edges(workloads::task_vertex(id), g.dependencies()); e != end; ++e) {
        const Task& before = g[boost::source(*e, g.dependencies())];
        if (before.kind == TaskKind::collective && before.comm == CommKind::dp)
          reduced_stages.insert(before.stage);
      }
      EXPECT_EQ(reduced_stages, (std::set<int>{r, 3 - r}));
      std::set<int> stepped;
      for (auto [e, end] = boost::out_edges(workloads::task_vertex(id), g.dependencies()); e != end; ++e) {
        const Task& after = g[boost::target(*e, g.dependencies())];
        EXPECT_EQ(after.kind, TaskKind::optimizer);
        stepped.insert(after.gpu);
      }
      EXPECT_EQ(stepped, (std::set<int>{a, b}));
    }
    EXPECT_EQ(pairs.size(), 8u);
  }
}

// Without data parallelism or ZeRO the pair's all-reduce carries the whole
// stage pair; DualPipe-V (one copy) has none.
TEST(DualPipeGraph, TheCopiesAllReduceIsDualPipesAlone) {
  const auto model = *find_model_preset("gpt3-1.3b");
  const auto plan = dualpipe_plan(1, 1, 2, 4);
  const auto syncs = pipeline_collectives(build_for(model, plan));
  ASSERT_EQ(syncs.size(), 1u);
  auto v = plan;
  v.schedule = ScheduleKind::dualpipe_v;
  EXPECT_TRUE(pipeline_collectives(build_for(model, v)).empty());
}

// Activations flow down the ranks for chunk 0 and up for chunk 1, m / 2
// micro-batches each way, and no micro-batch crosses from one direction
// into the other: 2 (m / 2)(p - 1) activation sends per direction.
TEST(DualPipeGraph, EachDirectionSendsItsHalfOfTheMicroBatchesItsOwnWay) {
  const auto model = *find_model_preset("gpt3-1.3b");
  const auto plan = dualpipe_plan(1, 1, 4, 8);
  const auto g = build_for(model, plan);
  int down = 0, up = 0;
  std::set<int> micro_batches;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind != TaskKind::send || t.transfer != TransferKind::activation)
      continue;
    micro_batches.insert(t.micro_batch);
    if (t.chunk == 0) {
      EXPECT_EQ(t.peer, t.gpu + 1);
      ++down;
    } else {
      EXPECT_EQ(t.peer, t.gpu - 1);
      ++up;
    }
  }
  EXPECT_EQ(down, 4 * 3);
  EXPECT_EQ(up, 4 * 3);
  EXPECT_EQ(micro_batches, (std::set<int>{0, 1, 2, 3}));
}

// The graph has no cycle (the replay would stall) over pipelines of 2 to 6
// ranks, with the fewest micro-batches and more.
TEST(DualPipeGraph, IsAcyclicOverManyPipelines) {
  auto model = *find_model_preset("gpt3-1.3b");
  for (int p : {2, 4, 6})
    for (int m : {2 * p, 2 * p + 2, 4 * p}) {
      model.layers = 2 * p;
      const auto g = build_for(model, dualpipe_plan(1, 1, p, m));
      std::vector<TaskId> order;
      EXPECT_NO_THROW(boost::topological_sort(g.dependencies(), std::back_inserter(order))) << p << " " << m;
    }
}

}  // namespace
}  // namespace trainsim::workloads
