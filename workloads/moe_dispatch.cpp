#include "workloads/moe_dispatch.hpp"

#include <algorithm>

#include "workloads/expert_parallel.hpp"
#include "workloads/group_limited_routing.hpp"
#include "workloads/skewed_touch.hpp"

namespace trainsim::workloads {

double draws_all_miss(int a, int b, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) {
    if (a - b - i <= 0)
      return 0;
    p *= static_cast<double>(a - b - i) / static_cast<double>(a - i);
  }
  return p;
}

namespace {

// The experts a token's top_k come from (A = M x E_n) and the share of
// nodes it reaches (M / N).
struct TokenReach {
  int experts = 0;
  double node_fraction = 1;
};
TokenReach reach(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  const int m = nodes_per_token(moe, nodes);
  const int per_node = moe.experts / ep * nodes.ranks_per_node;
  return {m * per_node, static_cast<double>(m) / nodes.nodes};
}

}  // namespace

EpNodes ep_nodes_of(const std::vector<int>& member_domains) {
  // Runs of consecutive members in one domain: uniform when no domain comes
  // back after another and every run has the same length.
  std::vector<int> domains;
  std::vector<int> lengths;
  for (std::size_t i = 0; i < member_domains.size(); ++i) {
    if (i > 0 && member_domains[i] == member_domains[i - 1]) {
      ++lengths.back();
      continue;
    }
    domains.push_back(member_domains[i]);
    lengths.push_back(1);
  }
  const int runs = static_cast<int>(domains.size());
  std::vector<int> sorted = domains;
  std::sort(sorted.begin(), sorted.end());
  const bool consecutive = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  const bool equal = !lengths.empty() &&
                     std::all_of(lengths.begin(), lengths.end(), [&](int l) { return l == lengths.front(); });
  return {runs, consecutive && equal ? lengths.front() : 0};
}

int nodes_per_token(const MoeSpec& moe, const EpNodes& nodes) {
  if (moe.max_nodes_per_token <= 0 || moe.max_nodes_per_token >= nodes.nodes)
    return nodes.nodes;
  return moe.max_nodes_per_token;
}

double node_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  if (group_limit_binds(moe, nodes))
    return group_limited_node_touch_probability(moe, ep, nodes);
  const TokenReach r = reach(moe, ep, nodes);
  const int per_node = moe.experts / ep * nodes.ranks_per_node;
  return r.node_fraction * (1 - draws_all_miss(r.experts, per_node, moe.top_k));
}

double rank_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  if (group_limit_binds(moe, nodes))
    return group_limited_rank_touch_probability(moe, ep, nodes);
  const TokenReach r = reach(moe, ep, nodes);
  return r.node_fraction * (1 - draws_all_miss(r.experts, moe.experts / ep, moe.top_k));
}

double ep_tokens_per_rank(const ModelSpec& model, const ParallelPlan& plan) {
  return double(plan.micro_batch_size) * model.seq_len / plan.cp /
         (plan.sequence_parallel && plan.tp > 1 ? plan.tp : 1);
}

double dispatch_element_bytes(const ParallelPlan& plan) {
  return plan.fp8_dispatch() ? 1.0 + 4.0 / 128.0 : 2.0;
}

EpNodes deepep_expert_sets(const ModelSpec& model, const ParallelPlan& plan, const EpNodes& nodes) {
  const int etp = dispatch_spans_expert_tp(model, plan) ? plan.expert_tp() : 1;
  return {.nodes = nodes.nodes, .ranks_per_node = nodes.ranks_per_node / etp};
}

DeepepTraffic deepep_traffic(const ModelSpec& model, const ParallelPlan& plan, const EpNodes& nodes,
                             const std::vector<DeepepLayer>& layers, int pass_pairs) {
  // With the dispatch over expert-TP x EP blocks, member m holds shards of
  // EP rank m / etp's experts; a token reaches it when it reaches that
  // expert set, and a node holds ranks_per_node / etp of the sets.
  const int etp = dispatch_spans_expert_tp(model, plan) ? plan.expert_tp() : 1;
  const auto n = static_cast<std::size_t>(plan.ep * etp);
  const EpNodes sets = deepep_expert_sets(model, plan, nodes);
  DeepepTraffic t;
  t.dispatch.assign(n * n, 0.0);
  t.combine.assign(n * n, 0.0);
  const double rho = rank_touch_probability(model.moe, plan.ep, sets);
  const double nu = node_touch_probability(model.moe, plan.ep, sets);
  t.node_share = rho > 0 ? nu / (nodes.ranks_per_node * rho) : 1.0;
  const double tokens = ep_tokens_per_rank(model, plan) * model.hidden;
  const double row = tokens * rho * pass_pairs;
  const double dispatch_row = row * dispatch_element_bytes(plan);
  const double combine_row = row * kCombineElementBytes;
  const auto e = static_cast<std::size_t>(etp);
  // Totals over the layers for a skewed exchange's node shares, per node
  // and over all of them.
  double node_sum = 0, set_sum = 0;
  const auto node_count = static_cast<std::size_t>(sets.nodes);
  const auto sets_per_node = static_cast<std::size_t>(sets.ranks_per_node);
  std::vector<double> node_of(node_count, 0.0), sets_of(node_count, 0.0);
  bool skewed = false;
  for (const auto& layer : layers) {
    if (layer.expert_share.empty()) {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j)
          if (i != j) {
            t.dispatch[i * n + j] += dispatch_row;
            t.combine[i * n + j] += combine_row;
          }
      node_sum += nu * nodes.nodes;
      set_sum += rho * plan.ep;
      for (std::size_t k = 0; k < node_count; ++k) {
        node_of[k] += nu;
        sets_of[k] += rho * static_cast<double>(sets_per_node);
      }
      continue;
    }
    skewed = true;
    const TouchProbabilities p =
        layer.touch.rank.empty() ? skewed_touch_probabilities(model.moe, plan.ep, sets, layer.expert_share)
                                 : layer.touch;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) {
          const double bytes = tokens * p.rank[j / e] * pass_pairs;
          t.dispatch[i * n + j] += bytes * dispatch_element_bytes(plan);
          t.combine[i * n + j] += bytes * kCombineElementBytes;
        }
    for (double x : p.node)
      node_sum += x;
    for (double x : p.rank)
      set_sum += x;
    for (std::size_t k = 0; k < node_count; ++k) {
      node_of[k] += p.node[k];
      for (std::size_t s = k * sets_per_node; s < (k + 1) * sets_per_node; ++s)
        sets_of[k] += p.rank[s];
    }
  }
  if (skewed) {
    t.node_share = set_sum > 0 ? node_sum / (etp * set_sum) : 1.0;
    for (std::size_t k = 0; k < node_count; ++k)
      t.node_shares.push_back(sets_of[k] > 0 ? node_of[k] / (etp * sets_of[k]) : 1.0);
  }
  return t;
}

}  // namespace trainsim::workloads
