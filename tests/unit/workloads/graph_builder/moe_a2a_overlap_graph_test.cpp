// plan.moe_a2a_overlap in the schedule and the task graph: Megatron's
// merged F&B steps warm up one more forward, and a merged backward's layers
// follow the forward's first layer rather than its end, so the GPU can run
// one while the other's all-to-alls are in flight.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

TEST(MoeA2aOverlap, MergedStepsWarmUpOneMoreForward) {
  // 1F1B, 2 ranks, 4 micro-batches: the last rank pairs F(i + 1) with B(i).
  const auto plain = make_one_f_one_b(2, 4);
  const auto merged = make_one_f_one_b(2, 4, 1);
  const auto& last = merged.per_rank[1];
  ASSERT_EQ(last.size(), 8u);
  EXPECT_EQ(plain.per_rank[1][1].kind, PipeOpKind::backward);
  EXPECT_EQ(last[0].kind, PipeOpKind::forward);
  EXPECT_EQ(last[1].kind, PipeOpKind::forward);
  EXPECT_EQ(last[2].kind, PipeOpKind::backward);
  EXPECT_EQ(last[2].micro_batch, 0);
  EXPECT_EQ(last[1].micro_batch, 1);
  // The first rank warms up 2 forwards instead of 1: its first backward
  // comes after F0 F1 F2.
  EXPECT_EQ(plain.per_rank[0][2].kind, PipeOpKind::backward);
  EXPECT_EQ(merged.per_rank[0][2].kind, PipeOpKind::forward);
  EXPECT_EQ(merged.per_rank[0][3].kind, PipeOpKind::backward);
  // Interleaved: every rank's first backward one op later.
  const auto a = make_interleaved_one_f_one_b(2, 4, 2);
  const auto b = make_interleaved_one_f_one_b(2, 4, 2, 0, 1);
  for (std::size_t r = 0; r < 2; ++r) {
    const auto first_backward = [](const std::vector<PipeOp>& ops) {
      std::size_t k = 0;
      while (ops[k].kind == PipeOpKind::forward)
        ++k;
      return k;
    };
    EXPECT_EQ(first_backward(b.per_rank[r]), first_backward(a.per_rank[r]) + 1) << r;
  }
}

ModelSpec small_moe() {
  return testing::small_moe_model(4, 4, 2, 1024);
}

bool depends_on(const TaskGraph& g, TaskId after, TaskId before) {
  for (auto [e, end] = boost::in_edges(workloads::task_vertex(after), g.dependencies()); e != end; ++e)
    if (boost::source(*e, g.dependencies()) == before)
      return true;
  return false;
}

// On the last stage (pp 2, 2 layers each), the merged pair F(1) & B(0): B's
// first piece (its last layer) follows F's first piece directly, not F's
// all-to-alls; B's last piece waits for F's last all-to-all.
TEST(MoeA2aOverlap, AMergedBackwardFollowsTheForwardsFirstLayerAndEndsAfterIt) {
  const ModelSpec m = small_moe();
  ParallelPlan plan{.dp = 2, .pp = 2, .ep = 2, .micro_batch_size = 1, .global_batch_size = 8};
  plan.moe_a2a_overlap = true;
  const auto cluster = testing::uniform_cluster(1, 4, 100e9, 1e-6);
  const AnalyticCostModel cost(m, plan, 0.5);
  const auto g = build_iteration(m, plan, cluster, cost);
  const int gpu = plan.gpu_of(1, 0, 0);
  TaskId f_first = 0, f_last = 0, b_first = 0, b_last = 0;
  bool found[4] = {};
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.gpu != gpu)
      continue;
    if (t.kind == TaskKind::forward && t.micro_batch == 1 && t.layer == 2)
      f_first = v, found[0] = true;
    if (t.kind == TaskKind::forward && t.micro_batch == 1 && t.layer == 3)
      f_last = v, found[1] = true;
    if (t.kind == TaskKind::backward && t.micro_batch == 0 && t.layer == 3)
      b_first = v, found[2] = true;
    if (t.kind == TaskKind::backward && t.micro_batch == 0 && t.layer == 2)
      b_last = v, found[3] = true;
  }
  for (bool f : found)
    ASSERT_TRUE(f);
  // The forward's last layer's all-to-all: the EP task right after it.
  TaskId f_a2a_last = 0;
  bool has_a2a = false;
  for (auto [e, end] = boost::out_edges(workloads::task_vertex(f_last), g.dependencies()); e != end; ++e)
    if (g[boost::target(*e, g.dependencies())].comm == CommKind::ep)
      f_a2a_last = boost::target(*e, g.dependencies()), has_a2a = true;
  ASSERT_TRUE(has_a2a);
  EXPECT_TRUE(depends_on(g, b_first, f_first));
  // The forward's last all-to-all gates the backward's last piece; its
  // first piece does not wait for it.
  EXPECT_FALSE(depends_on(g, b_first, f_a2a_last));
  bool gated = depends_on(g, b_last, f_a2a_last);
  EXPECT_TRUE(gated);
}

}  // namespace
}  // namespace trainsim::workloads
