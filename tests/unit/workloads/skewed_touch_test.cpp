// Touch probabilities under a skewed router (workloads/skewed_touch.hpp):
// with equal shares the Monte Carlo reproduces the balanced closed forms
// (no limit, node-limited, group-limited, both), with skewed shares the
// exact sums of successive sampling on small layers, within 5 standard
// errors of its kSkewedTouchSamples tokens; the same answer on every call.
#include "workloads/skewed_touch.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "workloads/group_limited_routing.hpp"

namespace trainsim::workloads {
namespace {

// 5 standard errors of a probability estimated from n tokens.
double tolerance(double p, int n = kSkewedTouchSamples) {
  return 5 * std::sqrt(std::max(p * (1 - p), 1e-6) / n);
}

MoeSpec moe_of(int experts, int top_k, int max_nodes = 0, int groups = 0, int group_topk = 0) {
  MoeSpec moe;
  moe.experts = experts;
  moe.top_k = top_k;
  moe.max_nodes_per_token = max_nodes;
  moe.router_num_groups = groups;
  moe.router_group_topk = group_topk;
  return moe;
}

void expect_closed_forms(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  const std::vector<double> equal(static_cast<std::size_t>(moe.experts), 1.0 / moe.experts);
  const TouchProbabilities p = skewed_touch_probabilities(moe, ep, nodes, equal);
  const double rho = rank_touch_probability(moe, ep, nodes), nu = node_touch_probability(moe, ep, nodes);
  ASSERT_EQ(p.rank.size(), static_cast<std::size_t>(ep));
  ASSERT_EQ(p.node.size(), static_cast<std::size_t>(nodes.nodes));
  for (double x : p.rank)
    EXPECT_NEAR(x, rho, tolerance(rho));
  for (double x : p.node)
    EXPECT_NEAR(x, nu, tolerance(nu));
}

TEST(SkewedTouch, EqualSharesReproduceTheBalancedClosedForms) {
  // DeepSeek-V3 on EP 64 over 8 nodes: no limit, then M = 4.
  expect_closed_forms(moe_of(256, 8), 64, {8, 8});
  expect_closed_forms(moe_of(256, 8, 4), 64, {8, 8});
  // Groups of half a node (B200, EP 32 over 4 nodes, G 8, G' 4), with a
  // remainder (top-7: 3 of the 4 groups take 2, one takes 1), and with the
  // node limit first (M 3, G' 2).
  ASSERT_TRUE(group_limit_binds(moe_of(256, 8, 0, 8, 4), {4, 8}));
  expect_closed_forms(moe_of(256, 8, 0, 8, 4), 32, {4, 8});
  expect_closed_forms(moe_of(256, 7, 0, 8, 4), 32, {4, 8});
  expect_closed_forms(moe_of(256, 8, 3, 8, 2), 32, {4, 8});
  // Groups within a GPU (64 groups of 4 on 32 GPUs of 8 experts).
  expect_closed_forms(moe_of(256, 8, 0, 64, 4), 32, {4, 8});
}

// 4 experts of shares 0.4, 0.3, 0.2, 0.1, one a GPU, 2 GPUs a node, top-2.
// Successive sampling takes expert j with P = p_j + sum_{i != j} p_i p_j /
// (1 - p_i); node {0, 1} is missed when both draws land on {2, 3}:
// sum_{i in {2, 3}} p_i (p_{2,3} - p_i) / (1 - p_i).
TEST(SkewedTouch, SkewedSharesGiveTheExactSuccessiveSamplingSums) {
  const std::vector<double> p{0.4, 0.3, 0.2, 0.1};
  const TouchProbabilities t = skewed_touch_probabilities(moe_of(4, 2), 4, {2, 2}, p);
  for (int j = 0; j < 4; ++j) {
    double exact = p[static_cast<std::size_t>(j)];
    for (int i = 0; i < 4; ++i)
      if (i != j)
        exact += p[static_cast<std::size_t>(i)] * p[static_cast<std::size_t>(j)] /
                 (1 - p[static_cast<std::size_t>(i)]);
    EXPECT_NEAR(t.rank[static_cast<std::size_t>(j)], exact, tolerance(exact)) << "expert " << j;
  }
  const double miss_first = 0.2 * 0.1 / 0.8 + 0.1 * 0.2 / 0.9;
  const double miss_second = 0.4 * 0.3 / 0.6 + 0.3 * 0.4 / 0.7;
  EXPECT_NEAR(t.node[0], 1 - miss_first, tolerance(1 - miss_first));
  EXPECT_NEAR(t.node[1], 1 - miss_second, tolerance(1 - miss_second));
  // Same answer every call (a fixed seed).
  const TouchProbabilities again = skewed_touch_probabilities(moe_of(4, 2), 4, {2, 2}, p);
  EXPECT_EQ(again.rank, t.rank);
  EXPECT_EQ(again.node, t.node);
}

// Node-limited to 1 node of 2 experts with top-2: the node is drawn in
// proportion to its summed share (0.7 against 0.3), then both its experts.
TEST(SkewedTouch, ANodeLimitDrawsTheNodesByTheirSummedShares) {
  const std::vector<double> p{0.4, 0.3, 0.2, 0.1};
  const TouchProbabilities t = skewed_touch_probabilities(moe_of(4, 2, 1), 4, {2, 2}, p);
  EXPECT_NEAR(t.node[0], 0.7, tolerance(0.7));
  EXPECT_NEAR(t.node[1], 0.3, tolerance(0.3));
  EXPECT_EQ(t.node[0] + t.node[1], 1.0);
  EXPECT_EQ(t.rank[0], t.node[0]);
  EXPECT_EQ(t.rank[1], t.node[0]);
  EXPECT_EQ(t.rank[3], t.node[1]);
}

// A layer whose copies all go to one expert (a measured table of zeros
// elsewhere): the token still takes top_k distinct experts, the rest
// uniformly among the unweighted ones.
TEST(SkewedTouch, ExpertsOfNoShareAreTakenUniformlyOnceTheWeightedOnesAreUsed) {
  const TouchProbabilities t = skewed_touch_probabilities(moe_of(4, 2), 4, {1, 4}, {1, 0, 0, 0});
  EXPECT_EQ(t.rank[0], 1.0);
  for (int j = 1; j < 4; ++j)
    EXPECT_NEAR(t.rank[static_cast<std::size_t>(j)], 1.0 / 3, tolerance(1.0 / 3));
  EXPECT_EQ(t.node[0], 1.0);
}

}  // namespace
}  // namespace trainsim::workloads
