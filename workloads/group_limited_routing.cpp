#include "workloads/group_limited_routing.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace trainsim::workloads {
namespace {

// The groups a token chooses among (`universe`, of `group_experts` each),
// how many it keeps (`chosen`), and the chance that a given node is among
// the ones it may reach at all (`node_fraction`: M / N under a node limit).
struct GroupDraw {
  int universe = 1;
  int chosen = 1;
  int group_experts = 1;
  double node_fraction = 1;
};

GroupDraw draw_of(const MoeSpec& moe, const EpNodes& nodes) {
  GroupDraw d;
  d.group_experts = moe.experts / moe.router_num_groups;
  const int m = nodes_per_token(moe, nodes);
  if (m < nodes.nodes) {
    // Node-limited first: the groups of the token's m nodes (whole groups
    // per node, group_layout_problems).
    const int node_experts = moe.experts / nodes.nodes;
    d.universe = m * (node_experts / d.group_experts);
    d.node_fraction = static_cast<double>(m) / nodes.nodes;
  } else {
    d.universe = moe.router_num_groups;
  }
  d.chosen = std::min(moe.router_group_topk, d.universe);
  return d;
}

// P(a unit of `unit_experts` aligned experts among the reachable ones is
// touched), given that it is reachable.
double unit_touch(const GroupDraw& d, int top_k, int unit_experts) {
  if (unit_experts >= d.group_experts) {
    // Every chosen group gets at least one expert (top_k >= chosen): the
    // unit is missed only when all chosen groups are outside its c.
    const int c = unit_experts / d.group_experts;
    return 1 - draws_all_miss(d.universe, c, d.chosen);
  }
  const int q = top_k / d.chosen;
  const int r = top_k % d.chosen;
  const double more = static_cast<double>(r) / d.chosen;
  const double hit = more * (1 - draws_all_miss(d.group_experts, unit_experts, q + 1)) +
                     (1 - more) * (1 - draws_all_miss(d.group_experts, unit_experts, q));
  return static_cast<double>(d.chosen) / d.universe * hit;
}

}  // namespace

bool group_limit_binds(const MoeSpec& moe, const EpNodes& nodes) {
  if (moe.router_num_groups <= 0 || moe.router_group_topk <= 0)
    return false;
  const GroupDraw d = draw_of(moe, nodes);
  return d.chosen < d.universe;
}

double group_limited_node_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  const GroupDraw d = draw_of(moe, nodes);
  const int node_experts = moe.experts / ep * nodes.ranks_per_node;
  return d.node_fraction * unit_touch(d, moe.top_k, node_experts);
}

double group_limited_rank_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  const GroupDraw d = draw_of(moe, nodes);
  return d.node_fraction * unit_touch(d, moe.top_k, moe.experts / ep);
}

std::vector<platforms::Problem> group_routing_problems(const MoeSpec& moe) {
  std::vector<platforms::Problem> problems;
  const int groups = moe.router_num_groups;
  const int topk = moe.router_group_topk;
  const std::string groups_key = "model.moe.router_num_groups";
  const std::string topk_key = "model.moe.router_group_topk";
  if (groups <= 0 && topk <= 0)
    return problems;
  if (groups <= 0) {
    problems.push_back({groups_key, fmt::format("missing with router_group_topk = {} (Megatron needs both: "
                                                "the number of expert groups, e.g. 8 for DeepSeek-V3)",
                                                topk)});
    return problems;
  }
  if (topk <= 0) {
    problems.push_back({topk_key, fmt::format("missing with router_num_groups = {} (Megatron needs both: "
                                              "the groups each token keeps, e.g. 4 for DeepSeek-V3)",
                                              groups)});
    return problems;
  }
  if (moe.experts % groups != 0) {
    problems.push_back(
        {groups_key, fmt::format("{} does not divide model.moe.experts = {} (the groups are "
                                 "equal runs of consecutive experts); expected a divisor of {}",
                                 groups, moe.experts, moe.experts)});
    return problems;
  }
  if (topk > groups) {
    problems.push_back({topk_key, fmt::format("{} is more than router_num_groups = {}; expected 1 to {}",
                                              topk, groups, groups)});
    return problems;
  }
  if (topk > moe.top_k) {
    problems.push_back(
        {topk_key, fmt::format("{} is more than model.moe.top_k = {}: each group is scored by the sum of its "
                               "top (top_k / router_group_topk) experts, none here; expected 1 to {}",
                               topk, moe.top_k, moe.top_k)});
    return problems;
  }
  const int group_experts = moe.experts / groups;
  if (moe.top_k > topk * group_experts)
    problems.push_back(
        {topk_key,
         fmt::format("{}: {} groups of {} experts hold {}, fewer than top_k = {}; expected at least {}", topk,
                     topk, group_experts, topk * group_experts, moe.top_k,
                     (moe.top_k + group_experts - 1) / group_experts)});
  return problems;
}

std::vector<platforms::Problem> group_layout_problems(const MoeSpec& moe, int ep, const EpNodes& nodes) {
  std::vector<platforms::Problem> problems;
  if (moe.router_num_groups <= 0 || moe.router_group_topk <= 0 || ep <= 0 || moe.experts % ep != 0 ||
      moe.experts % moe.router_num_groups != 0 || !nodes.uniform())
    return problems;
  const int g = moe.experts / moe.router_num_groups;
  const int gpu = moe.experts / ep;
  const int node = gpu * nodes.ranks_per_node;
  const auto nests = [](int a, int b) { return a % b == 0 || b % a == 0; };
  if (!nests(g, gpu) || !nests(g, node))
    problems.push_back(
        {"model.moe.router_num_groups",
         fmt::format(
             "{}: groups of {} experts against {} experts a GPU and {} a node (expert_parallel {}, {} "
             "GPUs of the EP group a node): a group straddles {}; trainsim models groups that hold "
             "whole GPUs' (and nodes') experts or lie within one; expected a group size that divides "
             "or is a multiple of both",
             moe.router_num_groups, g, gpu, node, ep, nodes.ranks_per_node,
             nests(g, gpu) ? "nodes" : "GPUs")});
  else if (nodes_per_token(moe, nodes) < nodes.nodes && node % g != 0)
    problems.push_back(
        {"model.moe.router_num_groups",
         fmt::format(
             "{} with max_nodes_per_token = {}: a group of {} experts spans nodes of {}, so the nodes "
             "cannot be chosen before the groups; expected groups within a node (router_num_groups a "
             "multiple of {}), or one of the two limits left out",
             moe.router_num_groups, moe.max_nodes_per_token, g, node, moe.experts / node)});
  return problems;
}

}  // namespace trainsim::workloads
