// plan.moe_dispatcher deepep in the task graph: every EP all-to-all asks for
// the deepep algorithm and carries its exchange (DeepEP's dispatch and
// combine bytes, the node share of the group's layout over nodes); the
// all_to_all dispatcher's graph is untouched.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>

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
  for (auto v : boost::make_iterator_range(boost::vertices(g.graph))) {
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
