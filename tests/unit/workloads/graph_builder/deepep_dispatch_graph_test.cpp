// plan.moe_dispatcher deepep in the task graph: every EP all-to-all asks for
// the deepep algorithm and carries its exchange (DeepEP's dispatch and
// combine bytes, the node share of the group's layout over nodes); the
// all_to_all dispatcher's graph is untouched.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <set>
#include <vector>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/moe_dispatch.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::workloads {
namespace {

// 2 MoE layers of 16 experts, top-4, on ep 8 over 2 nodes of 4 GPUs.
ModelSpec small_moe() {
  return testing::small_moe_model(2, 16, 4, 1024);
}

TaskGraph build(const ModelSpec& m, const ParallelPlan& plan) {
  const auto cluster = testing::uniform_cluster(2, 4, 100e9, 1e-6);
  const AnalyticCostModel cost(m, plan, 0.5);
  return build_iteration(m, plan, cluster, cost);
}

ParallelPlan plan_of(MoeDispatcher dispatcher) {
  ParallelPlan plan{.dp = 8, .ep = 8, .micro_batch_size = 1, .global_batch_size = 16};
  plan.moe_dispatcher = dispatcher;
  return plan;
}

TEST(DeepepDispatchGraph, EveryAllToAllAsksForDeepepWithItsRelayBytes) {
  ModelSpec m = small_moe();
  m.moe.max_nodes_per_token = 1;
  const auto g = build(m, plan_of(MoeDispatcher::deepep));
  const EpNodes nodes{2, 4};
  const double rho = rank_touch_probability(m.moe, 8, nodes);
  const double nu = node_touch_probability(m.moe, 8, nodes);
  int seen = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm != CommKind::ep)
      continue;
    ++seen;
    EXPECT_EQ(t.algorithm, platforms::CollectiveAlgorithm::deepep);
    ASSERT_GE(t.exchange, 0);
    const Exchange& x = g.exchanges[static_cast<std::size_t>(t.exchange)];
    // One pass pair per layer (no recomputation), 2 layers, 1,024 tokens, BF16.
    EXPECT_DOUBLE_EQ(x.dispatch_bytes[0 * 8 + 5], 2 * 1024.0 * 1024 * 2 * rho);
    EXPECT_DOUBLE_EQ(x.combine_bytes[0 * 8 + 5], x.dispatch_bytes[0 * 8 + 5]);
    EXPECT_DOUBLE_EQ(x.send_bytes[0 * 8 + 5], x.dispatch_bytes[0 * 8 + 5] + x.combine_bytes[5 * 8 + 0]);
    EXPECT_DOUBLE_EQ(x.node_share, nu / (4 * rho));
  }
  EXPECT_EQ(seen, 2 * 2);  // 2 micro-batches, forward and backward, one EP group
  // M = 1: a token stays on one node, never touching the other (rho, nu
  // are half of a one-node group's).
  EXPECT_DOUBLE_EQ(nu, 0.5);
}

// Expert TP 2 below tp 4 on 2 nodes of 8 (tp 4 x dp 4, ep 4): DeepEP
// exchanges over each expert-TP x EP block of 8 GPUs (one node: GPUs 0-7,
// 8-15), a token going to both shard GPUs of each expert set it reaches
// (4 sets of 4 experts, top-4: 1 - C(12, 4) / C(16, 4) = 1325 / 1820),
// and no expert-TP all-gather or reduce-scatter runs.
TEST(DeepepDispatchGraph, WithExpertTpBelowTpTheExchangeSpansTheExpertTpTimesEpBlock) {
  const ModelSpec m = small_moe();
  ParallelPlan plan{.dp = 4, .tp = 4, .ep = 4, .micro_batch_size = 1, .global_batch_size = 8};
  plan.etp = 2;
  plan.sequence_parallel = true;
  plan.zero_stage = 1;
  plan.moe_dispatcher = MoeDispatcher::deepep;
  const auto cluster = testing::uniform_cluster(2, 8, 100e9, 1e-6);
  const AnalyticCostModel cost(m, plan, 0.5);
  const TaskGraph g = build_iteration(m, plan, cluster, cost);
  const double rho = 1325.0 / 1820.0;
  int seen = 0;
  std::set<std::vector<int>> groups;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind == TaskKind::collective && t.comm == CommKind::tp) {
      EXPECT_EQ(g.groups[static_cast<std::size_t>(t.group)].size(), 4u);  // dense TP only
    }
    if (t.comm != CommKind::ep)
      continue;
    ++seen;
    groups.insert(g.groups[static_cast<std::size_t>(t.group)]);
    EXPECT_EQ(t.algorithm, platforms::CollectiveAlgorithm::deepep);
    ASSERT_GE(t.exchange, 0);
    const Exchange& x = g.exchanges[static_cast<std::size_t>(t.exchange)];
    ASSERT_EQ(x.dispatch_bytes.size(), 64u);
    // One pass pair per layer, 2 layers, 1,024 / 4 tokens, BF16.
    EXPECT_NEAR(x.dispatch_bytes[0 * 8 + 5], 2 * 256.0 * 1024 * 2 * rho, 1e-6);
    EXPECT_NEAR(x.node_share, 1 / (8 * rho), 1e-15);
  }
  // 2 blocks, 2 micro-batches, a forward and a backward each.
  EXPECT_EQ(seen, 2 * 2 * 2);
  EXPECT_EQ(groups, (std::set<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}));
}

TEST(DeepepDispatchGraph, TheAllToAllDispatcherKeepsItsGraph) {
  ModelSpec m = small_moe();
  const auto plain = build(m, plan_of(MoeDispatcher::all_to_all));
  m.moe.max_nodes_per_token = 1;  // node-limited routing alone moves no byte of the NCCL all-to-all
  EXPECT_EQ(graph_fingerprint(build(m, plan_of(MoeDispatcher::all_to_all))), graph_fingerprint(plain));
  EXPECT_TRUE(plain.exchanges.empty());
  EXPECT_NE(graph_fingerprint(build(m, plan_of(MoeDispatcher::deepep))), graph_fingerprint(plain));
}

}  // namespace
}  // namespace trainsim::workloads
