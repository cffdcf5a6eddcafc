// What DeepEP's dispatch and node-limited routing move
// (workloads/moe_dispatch.hpp): the touch probabilities against the
// hypergeometric closed form and against sampled routings, the bytes of an
// exchange (FP8 dispatch, BF16 combine), and how an EP group lies over nodes.
#include "workloads/moe_dispatch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "workloads/expert_parallel.hpp"
#include "workloads/skewed_touch.hpp"

namespace trainsim::workloads {
namespace {

// C(n, k) in logs.
double log_choose(int n, int k) {
  return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
}

MoeSpec deepseek_v3_moe(int max_nodes) {
  MoeSpec moe;
  moe.experts = 256;
  moe.top_k = 8;
  moe.max_nodes_per_token = max_nodes;
  return moe;
}

// DeepSeek-V3's EP 64 over 8 nodes of 8 GPUs: 4 experts per GPU, 32 per node.
constexpr int kEp = 64;
const EpNodes kEightNodes{8, 8};

TEST(NodeLimitedRouting, TouchProbabilitiesAreTheHypergeometricClosedForms) {
  // No limit: a token misses a node when its 8 experts all come from the
  // other 224, C(224, 8) / C(256, 8); a GPU, from the other 252.
  const MoeSpec free = deepseek_v3_moe(0);
  EXPECT_NEAR(node_touch_probability(free, kEp, kEightNodes),
              1 - std::exp(log_choose(224, 8) - log_choose(256, 8)), 1e-12);
  EXPECT_NEAR(rank_touch_probability(free, kEp, kEightNodes),
              1 - std::exp(log_choose(252, 8) - log_choose(256, 8)), 1e-12);
  // M = 4: a node is one of the token's 4 with chance 4/8, then touched
  // unless its 8 experts all come from the other 3 nodes' 96 of 128.
  const MoeSpec limited = deepseek_v3_moe(4);
  EXPECT_NEAR(node_touch_probability(limited, kEp, kEightNodes),
              0.5 * (1 - std::exp(log_choose(96, 8) - log_choose(128, 8))), 1e-12);
  EXPECT_NEAR(rank_touch_probability(limited, kEp, kEightNodes),
              0.5 * (1 - std::exp(log_choose(124, 8) - log_choose(128, 8))), 1e-12);
  // The figures docs/moe.md quotes: 3.63 nodes (3.18 other than the
  // sender's), 7.36 GPUs per token; 5.29, 4.63 and 7.68 without the limit.
  EXPECT_NEAR(8 * node_touch_probability(limited, kEp, kEightNodes), 3.629, 0.001);
  EXPECT_NEAR(7 * node_touch_probability(limited, kEp, kEightNodes), 3.175, 0.001);
  EXPECT_NEAR(kEp * rank_touch_probability(limited, kEp, kEightNodes), 7.359, 0.001);
  EXPECT_NEAR(8 * node_touch_probability(free, kEp, kEightNodes), 5.295, 0.001);
  EXPECT_NEAR(7 * node_touch_probability(free, kEp, kEightNodes), 4.633, 0.001);
  EXPECT_NEAR(kEp * rank_touch_probability(free, kEp, kEightNodes), 7.676, 0.001);
  // A limit at or above the group's nodes is no limit.
  EXPECT_EQ(node_touch_probability(deepseek_v3_moe(8), kEp, kEightNodes),
            node_touch_probability(free, kEp, kEightNodes));
}

// DeepSeek-V3's rule sampled: a token's M nodes, then its top_k experts
// among their experts. No token reaches more than M nodes, and the mean
// nodes and GPUs it reaches are the closed forms'.
TEST(NodeLimitedRouting, SampledTokensNeverReachMoreThanMNodesAndAverageTheClosedForm) {
  std::mt19937_64 rng(33);
  for (int m : {1, 2, 4, 8}) {
    const MoeSpec moe = deepseek_v3_moe(m);
    std::vector<int> nodes(8);
    std::iota(nodes.begin(), nodes.end(), 0);
    double node_sum = 0, rank_sum = 0;
    int most = 0;
    const int tokens = 20000;
    for (int t = 0; t < tokens; ++t) {
      std::shuffle(nodes.begin(), nodes.end(), rng);
      std::vector<int> experts;
      for (int k = 0; k < m; ++k)
        for (int e = 0; e < 32; ++e)
          experts.push_back(nodes[static_cast<std::size_t>(k)] * 32 + e);
      std::shuffle(experts.begin(), experts.end(), rng);
      std::set<int> touched_nodes, touched_ranks;
      for (int k = 0; k < moe.top_k; ++k) {
        touched_nodes.insert(experts[static_cast<std::size_t>(k)] / 32);
        touched_ranks.insert(experts[static_cast<std::size_t>(k)] / 4);
      }
      most = std::max(most, static_cast<int>(touched_nodes.size()));
      node_sum += static_cast<double>(touched_nodes.size());
      rank_sum += static_cast<double>(touched_ranks.size());
    }
    EXPECT_LE(most, m);
    EXPECT_LE(8 * node_touch_probability(moe, kEp, kEightNodes), m + 1e-12);
    EXPECT_NEAR(node_sum / tokens / (8 * node_touch_probability(moe, kEp, kEightNodes)), 1.0, 0.01) << m;
    EXPECT_NEAR(rank_sum / tokens / (kEp * rank_touch_probability(moe, kEp, kEightNodes)), 1.0, 0.01) << m;
  }
}

TEST(DeepepTraffic, DispatchInFp8WithScalesCombineInBf16OncePerGpuTouched) {
  ModelSpec model = *find_model_preset("deepseek-v3");
  model.moe.max_nodes_per_token = 4;
  ParallelPlan plan;
  plan.ep = kEp;
  plan.dp = 128;
  plan.pp = 16;
  plan.micro_batch_size = 1;
  plan.moe_dispatcher = MoeDispatcher::deepep;
  plan.precision = Precision::fp8;
  const std::vector<DeepepLayer> balanced(2);                            // two MoE layers
  const auto t = deepep_traffic(model, plan, kEightNodes, balanced, 2);  // 2 pass pairs
  const double rho = rank_touch_probability(model.moe, kEp, kEightNodes);
  const double tokens = 4096, h = 7168;
  // Per pair: layers x pass pairs x tokens x rho x h x (1 + 4/128) bytes out, 2 bytes back.
  EXPECT_NEAR(t.dispatch[0 * kEp + 9], 2 * 2 * tokens * rho * h * (1 + 4.0 / 128), 1e-3);
  EXPECT_NEAR(t.combine[0 * kEp + 9], 2 * 2 * tokens * rho * h * 2, 1e-3);
  EXPECT_EQ(t.dispatch[5 * kEp + 5], 0.0);
  EXPECT_NEAR(t.node_share, node_touch_probability(model.moe, kEp, kEightNodes) / (8 * rho), 1e-15);
  // Against the pairwise all-to-all's BF16 top_k copies, what leaves a GPU
  // for other nodes per token and pass: 14 h there, 3.175 x 1.03 = 3.27 h here.
  const double rdma_per_token = t.node_share * 8 * rho * 7 * (1 + 4.0 / 128);
  EXPECT_NEAR(rdma_per_token, 3.275, 0.001);
  // BF16 plans dispatch in BF16.
  plan.precision = Precision::bf16;
  EXPECT_DOUBLE_EQ(deepep_traffic(model, plan, kEightNodes, balanced, 2).dispatch[9], t.combine[9]);
  // A skewed layer (GPU 9's 4 experts three times as likely as the others):
  // each GPU receives by its own touch probability under the skewed router
  // (workloads/skewed_touch.hpp), which saturates: less than 3 x GPU 10's.
  std::vector<double> share(256, 1.0 / 264);
  for (int e = 36; e < 40; ++e)
    share[static_cast<std::size_t>(e)] = 3.0 / 264;
  const auto s =
      deepep_traffic(model, plan, kEightNodes, {DeepepLayer{.expert_share = share, .touch = {}}}, 1);
  const TouchProbabilities p = skewed_touch_probabilities(model.moe, kEp, kEightNodes, share);
  EXPECT_DOUBLE_EQ(s.dispatch[9], tokens * h * p.rank[9] * 2);
  EXPECT_DOUBLE_EQ(s.combine[10], tokens * h * p.rank[10] * 2);
  EXPECT_GT(s.dispatch[9], 2 * s.dispatch[10]);
  EXPECT_LT(s.dispatch[9], 3 * s.dispatch[10]);
  double nodes = 0, ranks = 0;
  for (double x : p.node)
    nodes += x;
  for (double x : p.rank)
    ranks += x;
  EXPECT_DOUBLE_EQ(s.node_share, nodes / ranks);
  // Per node: the RDMA bytes into node k are a token's chance of touching
  // k, whatever its GPUs receive; the hot node (GPU 9's, node 1) has a
  // share of its own. Balanced exchanges keep the one figure.
  EXPECT_TRUE(t.node_shares.empty());
  ASSERT_EQ(s.node_shares.size(), 8u);
  for (std::size_t k = 0; k < 8; ++k) {
    const std::size_t from = k == 0 ? 8 : 0;  // a GPU of another node
    double delivered = 0;
    for (std::size_t j = 8 * k; j < 8 * k + 8; ++j)
      delivered += s.dispatch[from * kEp + j];
    EXPECT_NEAR(s.node_shares[k] * delivered, tokens * h * p.node[k] * 2, 1e-9 * delivered) << "node " << k;
  }
  // The hot node's GPUs share more of its tokens: 0.458 against the cold
  // nodes' 0.502 (equal within the Monte Carlo's error), where the one
  // figure of every node (0.495) charged it 8.1% more RDMA bytes.
  EXPECT_LT(s.node_shares[1], s.node_shares[0] - 0.03);
  EXPECT_NEAR(s.node_shares[2], s.node_shares[0], 0.005);
}

// DeepEP with expert TP 2 below tp 4 (Megatron's flex dispatcher): ep 8 x
// etp 2 = 16 GPUs over 2 nodes of 8, 16 experts (2 per expert set, 4 sets
// and 8 experts per node), top-4, no node limit. A token reaches a set
// with P = 1 - C(14, 4) / C(16, 4) = 819 / 1820 and a node with
// 1 - C(8, 4) / C(16, 4) = 1750 / 1820; it goes to both GPUs of each set
// it reaches, once per node over RDMA: node share 1750 / (8 x 819).
TEST(DeepepTraffic, WithExpertTpBelowTpEveryShardGpuOfATouchedSetReceivesTheToken) {
  ModelSpec model = *find_model_preset("mixtral-8x7b");
  model.hidden = 1024;
  model.seq_len = 2048;
  model.moe.experts = 16;
  model.moe.top_k = 4;
  ParallelPlan plan;
  plan.tp = 4;
  plan.sequence_parallel = true;
  plan.dp = 4;
  plan.ep = 8;
  plan.etp = 2;
  plan.micro_batch_size = 1;
  plan.moe_dispatcher = MoeDispatcher::deepep;
  ASSERT_TRUE(dispatch_spans_expert_tp(model, plan));
  const EpNodes block{2, 8};
  const auto t = deepep_traffic(model, plan, block, {DeepepLayer{}}, 1);
  ASSERT_EQ(t.dispatch.size(), 16u * 16u);
  const double rho = 819.0 / 1820.0, nu = 1750.0 / 1820.0;
  const double tokens = 2048.0 / 4;  // the sequence-parallel share of a TP rank
  // GPUs 4 and 5 hold set 2's shards.
  EXPECT_NEAR(t.dispatch[0 * 16 + 4], tokens * 1024 * rho * 2, 1e-6);
  EXPECT_NEAR(t.dispatch[0 * 16 + 5], t.dispatch[0 * 16 + 4], 1e-6);
  EXPECT_EQ(t.dispatch[7 * 16 + 7], 0.0);
  EXPECT_NEAR(t.node_share, nu / (8 * rho), 1e-15);
  EXPECT_NEAR(t.node_share, 1750.0 / (8 * 819.0), 1e-15);
  // Skewed (set 1's experts 2 and 3 three times as likely): both shard GPUs
  // of a set receive its touch probability's bytes; the node share is the
  // ratio of the totals, each set counted on its 2 members.
  std::vector<double> share(16, 1.0 / 20);
  share[2] = share[3] = 3.0 / 20;
  const auto s = deepep_traffic(model, plan, block, {DeepepLayer{.expert_share = share, .touch = {}}}, 1);
  const EpNodes sets{2, 4};
  const TouchProbabilities p = skewed_touch_probabilities(model.moe, 8, sets, share);
  EXPECT_DOUBLE_EQ(s.dispatch[0 * 16 + 2], tokens * 1024 * p.rank[1] * 2);
  EXPECT_DOUBLE_EQ(s.dispatch[0 * 16 + 3], s.dispatch[0 * 16 + 2]);
  EXPECT_DOUBLE_EQ(s.dispatch[0 * 16 + 4], tokens * 1024 * p.rank[2] * 2);
  EXPECT_GT(p.rank[1], p.rank[2]);
  EXPECT_DOUBLE_EQ(s.node_share,
                   (p.node[0] + p.node[1]) / (2 * std::accumulate(p.rank.begin(), p.rank.end(), 0.0)));
  // The all_to_all dispatcher keeps its EP groups and expert-TP collectives.
  plan.moe_dispatcher = MoeDispatcher::all_to_all;
  EXPECT_FALSE(dispatch_spans_expert_tp(model, plan));
  EXPECT_TRUE(has_expert_tp_collectives(model, plan));
  plan.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_FALSE(has_expert_tp_collectives(model, plan));
}

TEST(EpNodes, GroupsOfWholeNodesOrOneNodeAreUniformOthersAreNot) {
  const EpNodes two = ep_nodes_of({4, 4, 5, 5});
  EXPECT_EQ(two.nodes, 2);
  EXPECT_EQ(two.ranks_per_node, 2);
  EXPECT_EQ(ep_nodes_of({3, 3, 3}).nodes, 1);
  EXPECT_EQ(ep_nodes_of({3, 3, 3}).ranks_per_node, 3);
  EXPECT_FALSE(ep_nodes_of({0, 0, 0, 1}).uniform());  // 3 + 1
  EXPECT_FALSE(ep_nodes_of({0, 1, 0, 1}).uniform());  // not consecutive
}

}  // namespace
}  // namespace trainsim::workloads
