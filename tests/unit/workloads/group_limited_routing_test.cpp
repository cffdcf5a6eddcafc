// Group-limited routing (workloads/group_limited_routing.hpp): the touch
// probabilities against hand computations, the DeepEP bytes per rank pair
// they give, their combination with max_nodes_per_token, keys that limit
// nothing leaving today's figures exactly, NCCL all-to-all's graph
// untouched, Megatron's rule sampled against the closed form, and the rules
// of the keys.
#include "workloads/group_limited_routing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/moe_dispatch.hpp"
#include "workloads/skewed_touch.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::workloads {
namespace {

MoeSpec deepseek_v3_moe(int groups, int group_topk, int max_nodes = 0) {
  MoeSpec moe;
  moe.experts = 256;
  moe.top_k = 8;
  moe.router_num_groups = groups;
  moe.router_group_topk = group_topk;
  moe.max_nodes_per_token = max_nodes;
  return moe;
}

// DGX B200 at EP 32: 8 experts a GPU, 8 GPUs (64 experts) a node, 4 nodes.
constexpr int kB200Ep = 32;
const EpNodes kFourNodes{4, 8};
// DGX H100 at EP 64: 4 experts a GPU, 32 a node, 8 nodes.
constexpr int kH100Ep = 64;
const EpNodes kEightNodes{8, 8};

// G 8, G' 4, groups of 32 experts (half a B200 node). A node holds 2
// groups: it is missed when the 4 chosen groups are all among the other 6,
// C(6, 4) / C(8, 4) = 15 / 70. A GPU lies in one group, chosen with 4/8,
// which gives it 8 / 4 = 2 of its 32 experts: missed with C(24, 2) /
// C(32, 2) = 276 / 496.
TEST(GroupLimitedRouting, TouchProbabilitiesAreTheQuotaClosedFormsOnB200) {
  const MoeSpec moe = deepseek_v3_moe(8, 4);
  ASSERT_TRUE(group_limit_binds(moe, kFourNodes));
  EXPECT_NEAR(node_touch_probability(moe, kB200Ep, kFourNodes), 55.0 / 70.0, 1e-15);
  EXPECT_NEAR(rank_touch_probability(moe, kB200Ep, kFourNodes), 0.5 * 220.0 / 496.0, 1e-15);
  // 3.14 nodes (2.36 other than the sender's) and 7.10 GPUs a token.
  EXPECT_NEAR(4 * node_touch_probability(moe, kB200Ep, kFourNodes), 3.1429, 1e-4);
  EXPECT_NEAR(3 * node_touch_probability(moe, kB200Ep, kFourNodes), 2.3571, 1e-4);
  EXPECT_NEAR(kB200Ep * rank_touch_probability(moe, kB200Ep, kFourNodes), 7.0968, 1e-4);
  // Without the groups a token reaches 2.71 other nodes (docs/calibration.md).
  EXPECT_NEAR(3 * node_touch_probability(deepseek_v3_moe(0, 0), kB200Ep, kFourNodes), 2.711, 1e-3);
}

// A remainder: top-8 over G' 3 groups gives quotas 3, 3, 2 (q 2, r 2), so
// a GPU (8 of its group's 32 experts) in a chosen group is hit with 2/3
// (1 - C(24, 3)/C(32, 3)) + 1/3 (1 - C(24, 2)/C(32, 2)), times 3/8 for its
// group being chosen; a node (2 groups) is missed with C(6, 3)/C(8, 3).
TEST(GroupLimitedRouting, AQuotaRemainderGivesSomeGroupsOneMoreExpert) {
  const MoeSpec moe = deepseek_v3_moe(8, 3);
  const double three = 1 - 2024.0 / 4960.0;  // C(24, 3) / C(32, 3)
  const double two = 1 - 276.0 / 496.0;      // C(24, 2) / C(32, 2)
  EXPECT_NEAR(rank_touch_probability(moe, kB200Ep, kFourNodes), 3.0 / 8 * (2.0 / 3 * three + 1.0 / 3 * two),
              1e-15);
  EXPECT_NEAR(node_touch_probability(moe, kB200Ep, kFourNodes), 1 - 20.0 / 56.0, 1e-15);  // C(6,3)/C(8,3)
}

// The bytes DeepEP moves per rank pair on the B200 row's layout (4,096
// tokens a GPU, hidden 7,168, BF16, one MoE layer, one pass pair):
//   i -> j = 4096 x 7168 x 2 x (110 / 496) = 13,022,637.4 bytes
//   node share = P(node) / (8 P(GPU)) = (55/70) / (8 x 110/496) = 31 / 70
// and what leaves a GPU for the 3 other nodes per pass over RDMA: 3 x 55/70
// x 4096 x 7168 x 2 = 138,412,032 bytes (159 MB without the groups).
TEST(GroupLimitedRouting, DeepepBytesPerRankPairOnTheB200Layout) {
  ModelSpec model = *find_model_preset("deepseek-v3");
  model.seq_len = 4096;
  model.moe.router_num_groups = 8;
  model.moe.router_group_topk = 4;
  ParallelPlan plan;
  plan.ep = kB200Ep;
  plan.dp = 32;
  plan.pp = 8;
  plan.micro_batch_size = 1;
  plan.moe_dispatcher = MoeDispatcher::deepep;
  const auto t = deepep_traffic(model, plan, kFourNodes, {DeepepLayer{}}, 1);
  EXPECT_NEAR(t.dispatch[0 * kB200Ep + 9], 13022637.41935484, 1e-4);
  EXPECT_NEAR(t.combine[0 * kB200Ep + 9], 13022637.41935484, 1e-4);
  EXPECT_EQ(t.dispatch[3 * kB200Ep + 3], 0.0);
  EXPECT_NEAR(t.node_share, 31.0 / 70.0, 1e-15);
  const double rdma_to_other_nodes = 3 * 8 * t.dispatch[0 * kB200Ep + 9] * t.node_share;
  EXPECT_NEAR(rdma_to_other_nodes, 138412032.0, 1e-3);
  // A skewed layer: each GPU receives by its touch probability under the
  // skewed group-limited router (workloads/skewed_touch.hpp).
  std::vector<double> share(256, 1.0 / 268);
  for (int e = 72; e < 80; ++e)  // GPU 9's 8 experts
    share[static_cast<std::size_t>(e)] = 2.5 / 268;
  const auto s =
      deepep_traffic(model, plan, kFourNodes, {DeepepLayer{.expert_share = share, .touch = {}}}, 1);
  const TouchProbabilities p = skewed_touch_probabilities(model.moe, kB200Ep, kFourNodes, share);
  EXPECT_DOUBLE_EQ(s.dispatch[0 * kB200Ep + 9] / s.dispatch[0 * kB200Ep + 10], p.rank[9] / p.rank[10]);
  EXPECT_GT(p.rank[9], p.rank[10]);
}

// With max_nodes_per_token M as well: the token's M nodes first, then G'
// of their groups. B200, G' 2, M 3: 6 groups on the 3 nodes, 2 chosen, a
// quota of 4 each. Node: 3/4 (1 - C(4, 2)/C(6, 2)) = 3/4 x 9/15. GPU: 3/4
// x 2/6 x (1 - C(24, 4)/C(32, 4)) = 1/4 x (1 - 10626/35960).
TEST(GroupLimitedRouting, WithANodeLimitTheNodesComeFirstThenTheGroups) {
  const MoeSpec moe = deepseek_v3_moe(8, 2, 3);
  ASSERT_TRUE(group_limit_binds(moe, kFourNodes));
  EXPECT_NEAR(node_touch_probability(moe, kB200Ep, kFourNodes), 0.75 * 9.0 / 15.0, 1e-15);
  EXPECT_NEAR(rank_touch_probability(moe, kB200Ep, kFourNodes), 0.25 * (1 - 10626.0 / 35960.0), 1e-15);
  // G' 4 with M 2: the 4 groups of the token's 2 nodes are all chosen, so
  // the node limit alone decides, exactly as without the group keys.
  const MoeSpec loose = deepseek_v3_moe(8, 4, 2);
  EXPECT_FALSE(group_limit_binds(loose, kFourNodes));
  EXPECT_EQ(node_touch_probability(loose, kB200Ep, kFourNodes),
            node_touch_probability(deepseek_v3_moe(0, 0, 2), kB200Ep, kFourNodes));
  EXPECT_EQ(rank_touch_probability(loose, kB200Ep, kFourNodes),
            rank_touch_probability(deepseek_v3_moe(0, 0, 2), kB200Ep, kFourNodes));
}

TEST(GroupLimitedRouting, KeysThatLimitNothingGiveTodaysFiguresExactly) {
  // G' = G: every group kept, plain top-k.
  const MoeSpec all = deepseek_v3_moe(8, 8);
  EXPECT_FALSE(group_limit_binds(all, kFourNodes));
  EXPECT_EQ(node_touch_probability(all, kB200Ep, kFourNodes),
            node_touch_probability(deepseek_v3_moe(0, 0), kB200Ep, kFourNodes));
  EXPECT_EQ(rank_touch_probability(all, kB200Ep, kFourNodes),
            rank_touch_probability(deepseek_v3_moe(0, 0), kB200Ep, kFourNodes));
}

// On H100 at EP 64 a group of 32 experts is one node: G 8, G' 4 reaches
// exactly 4 nodes (each chosen group gets 2 experts), where
// max_nodes_per_token 4 (experts uniform over the 4 nodes' 128) says 3.63.
TEST(GroupLimitedRouting, GroupsOfOneNodeReachExactlyGroupTopkNodes) {
  const MoeSpec moe = deepseek_v3_moe(8, 4);
  EXPECT_NEAR(8 * node_touch_probability(moe, kH100Ep, kEightNodes), 4.0, 1e-12);
  EXPECT_NEAR(8 * node_touch_probability(deepseek_v3_moe(0, 0, 4), kH100Ep, kEightNodes), 3.629, 1e-3);
  // A GPU: 4/8 x (1 - C(28, 2)/C(32, 2)).
  EXPECT_NEAR(rank_touch_probability(moe, kH100Ep, kEightNodes), 0.5 * (1 - 378.0 / 496.0), 1e-15);
}

// Megatron's group_limited_topk on random normal logits (what the
// benchmark rows' forced balance feeds it): the group score is the sum of
// each group's top (top_k / G') scores, the G' best groups kept, the top_k
// of their experts taken. The closed form counts nodes within 2% and GPUs
// within 5% of the sampled rule on the B200 and H100 layouts (sampled
// 200,000 tokens: B200 3.12 nodes, 6.85 GPUs; H100 3.97, 7.49).
struct Reached {
  double nodes = 0;
  double gpus = 0;
};
Reached sample_megatron_rule(const MoeSpec& moe, int experts_per_gpu, int experts_per_node, int tokens) {
  std::mt19937_64 rng(33);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int groups = moe.router_num_groups;
  const int g = moe.experts / groups;
  const int per_group = moe.top_k / moe.router_group_topk;
  std::vector<double> score(static_cast<std::size_t>(moe.experts));
  Reached sum;
  for (int t = 0; t < tokens; ++t) {
    for (auto& s : score)
      s = normal(rng);
    std::vector<std::pair<double, int>> group_score;
    for (int k = 0; k < groups; ++k) {
      std::vector<double> mine(score.begin() + k * g, score.begin() + (k + 1) * g);
      std::partial_sort(mine.begin(), mine.begin() + per_group, mine.end(), std::greater<>());
      group_score.emplace_back(std::accumulate(mine.begin(), mine.begin() + per_group, 0.0), k);
    }
    std::partial_sort(group_score.begin(), group_score.begin() + moe.router_group_topk, group_score.end(),
                      std::greater<>());
    std::vector<std::pair<double, int>> candidates;
    for (int k = 0; k < moe.router_group_topk; ++k)
      for (int e = group_score[static_cast<std::size_t>(k)].second * g;
           e < (group_score[static_cast<std::size_t>(k)].second + 1) * g; ++e)
        candidates.emplace_back(score[static_cast<std::size_t>(e)], e);
    std::partial_sort(candidates.begin(), candidates.begin() + moe.top_k, candidates.end(), std::greater<>());
    std::set<int> nodes, gpus;
    for (int k = 0; k < moe.top_k; ++k) {
      nodes.insert(candidates[static_cast<std::size_t>(k)].second / experts_per_node);
      gpus.insert(candidates[static_cast<std::size_t>(k)].second / experts_per_gpu);
    }
    sum.nodes += static_cast<double>(nodes.size());
    sum.gpus += static_cast<double>(gpus.size());
  }
  return {sum.nodes / tokens, sum.gpus / tokens};
}

TEST(GroupLimitedRouting, ClosedFormIsNearMegatronsRuleSampledOnRandomLogits) {
  const MoeSpec moe = deepseek_v3_moe(8, 4);
  const Reached b200 = sample_megatron_rule(moe, 8, 64, 20000);
  EXPECT_NEAR(4 * node_touch_probability(moe, kB200Ep, kFourNodes) / b200.nodes, 1.0, 0.02);
  EXPECT_NEAR(kB200Ep * rank_touch_probability(moe, kB200Ep, kFourNodes) / b200.gpus, 1.0, 0.05);
  // The quota over-counts GPUs (the real top-k sometimes takes 3 + 1).
  EXPECT_GT(kB200Ep * rank_touch_probability(moe, kB200Ep, kFourNodes), b200.gpus);
  const Reached h100 = sample_megatron_rule(moe, 4, 32, 20000);
  EXPECT_NEAR(8 * node_touch_probability(moe, kH100Ep, kEightNodes) / h100.nodes, 1.0, 0.02);
  EXPECT_NEAR(kH100Ep * rank_touch_probability(moe, kH100Ep, kEightNodes) / h100.gpus, 1.0, 0.05);
}

// The task graph: 2 MoE layers of 16 experts, top-4, ep 8 over 2 nodes of
// 4 GPUs (2 experts a GPU, 8 a node); G 4 (groups of 4 experts: 2 GPUs),
// G' 2, quota 2. GPU: 2/4 x (1 - C(2, 2)/C(4, 2)) = 5/12; node: 1 - C(2,
// 2)/C(4, 2) = 5/6; node share (5/6) / (4 x 5/12) = 1/2.
TaskGraph build(const ModelSpec& m, MoeDispatcher dispatcher) {
  ParallelPlan plan{.dp = 8, .ep = 8, .micro_batch_size = 1, .global_batch_size = 16};
  plan.moe_dispatcher = dispatcher;
  const auto cluster = testing::uniform_cluster(2, 4, 100e9, 1e-6);
  const AnalyticCostModel cost(m, plan, 0.5);
  return build_iteration(m, plan, cluster, cost);
}

TEST(GroupLimitedRouting, DeepepExchangesCarryTheGroupLimitedBytesAllToAllIsUntouched) {
  const ModelSpec plain = testing::small_moe_model(2, 16, 4, 1024);
  ModelSpec grouped = plain;
  grouped.moe.router_num_groups = 4;
  grouped.moe.router_group_topk = 2;
  // NCCL all-to-all moves one copy per routed expert whatever the groups.
  EXPECT_EQ(graph_fingerprint(build(grouped, MoeDispatcher::all_to_all)),
            graph_fingerprint(build(plain, MoeDispatcher::all_to_all)));
  const auto g = build(grouped, MoeDispatcher::deepep);
  int seen = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm != CommKind::ep)
      continue;
    ++seen;
    const Exchange& x = g.exchanges[static_cast<std::size_t>(t.exchange)];
    // 2 layers x 1,024 tokens x 1,024 channels x 2 bytes x 5/12.
    EXPECT_NEAR(x.dispatch_bytes[0 * 8 + 5], 2 * 1024.0 * 1024 * 2 * 5.0 / 12.0, 1e-6);
    EXPECT_NEAR(x.node_share, 0.5, 1e-15);
  }
  EXPECT_EQ(seen, 2 * 2);
  EXPECT_NE(graph_fingerprint(g), graph_fingerprint(build(plain, MoeDispatcher::deepep)));
}

TEST(GroupLimitedRouting, BadKeyCombinationsNameTheKeyAndWhatWasExpected) {
  const auto first = [](const MoeSpec& moe) {
    const auto p = group_routing_problems(moe);
    return p.empty() ? std::string() : p.front().key + ": " + p.front().message;
  };
  EXPECT_EQ(first(deepseek_v3_moe(8, 4)), "");
  EXPECT_EQ(first(deepseek_v3_moe(0, 0)), "");
  EXPECT_NE(first(deepseek_v3_moe(0, 4)).find("model.moe.router_num_groups: missing"), std::string::npos);
  EXPECT_NE(first(deepseek_v3_moe(8, 0)).find("model.moe.router_group_topk: missing"), std::string::npos);
  EXPECT_NE(first(deepseek_v3_moe(6, 2)).find("6 does not divide model.moe.experts = 256"),
            std::string::npos);
  EXPECT_NE(first(deepseek_v3_moe(8, 9)).find("expected 1 to 8"), std::string::npos);
  MoeSpec few = deepseek_v3_moe(8, 4);
  few.top_k = 2;
  EXPECT_NE(first(few).find("more than model.moe.top_k = 2"), std::string::npos) << first(few);
  // 64 groups of 4 experts, 1 kept: 4 experts for top-8.
  EXPECT_NE(first(deepseek_v3_moe(64, 1)).find("hold 4, fewer than top_k = 8; expected at least 2"),
            std::string::npos)
      << first(deepseek_v3_moe(64, 1));
  // Layouts: groups of 12 of 48 experts against 8 a GPU straddle GPUs.
  MoeSpec straddle = deepseek_v3_moe(4, 2);
  straddle.experts = 48;
  const auto layout = group_layout_problems(straddle, 6, EpNodes{1, 6});
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_NE(layout.front().message.find("straddles GPUs"), std::string::npos) << layout.front().message;
  // Groups of 128 experts (2 B200 nodes) with a node limit.
  const auto spans = group_layout_problems(deepseek_v3_moe(2, 1, 3), kB200Ep, kFourNodes);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_NE(spans.front().message.find("spans nodes of 64"), std::string::npos) << spans.front().message;
  EXPECT_TRUE(group_layout_problems(deepseek_v3_moe(8, 4), kB200Ep, kFourNodes).empty());
}

}  // namespace
}  // namespace trainsim::workloads
