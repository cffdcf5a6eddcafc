#pragma once
// Which GPUs and nodes of an EP group a token touches when the router is
// skewed (model.moe.routing not balanced): what DeepEP-style dispatch moves
// (workloads/moe_dispatch.hpp) depends on these, not on the load factors
// alone, since a skewed router also changes how often a token's experts
// share a GPU or a node.
//
// Model: a top_k router without replacement under per-expert probabilities
// p_e (the layer's expert shares, workloads/expert_routing.hpp), drawn as
// successive sampling: each next expert taken with probability proportional
// to its p_e among the experts the token may still take (Plackett-Luce;
// with zero weight left, uniformly among those). With the limits of
// workloads/moe_dispatch.hpp and group_limited_routing.hpp:
//   node-limited (max_nodes_per_token M < N): the token's M nodes first,
//     successively in proportion to their summed p, then its top_k experts
//     among their experts as above;
//   group-limited (router_num_groups / router_group_topk binding): (the M
//     nodes first, then) its G' groups successively in proportion to their
//     summed p, r = top_k mod G' of them (uniformly) taking q + 1 experts and
//     the others q = top_k / G', each group's drawn as above among its own.
// Under equal p every step is uniform: the model is exactly the balanced
// one whose closed forms moe_dispatch.hpp and group_limited_routing.hpp
// give, and deepep_traffic keeps those for balanced layers.
//
// The probabilities have no tractable closed form in general: they are
// estimated by a deterministic Monte Carlo of kSkewedTouchSamples tokens
// (std::mt19937_64 with a fixed seed, the same every run and platform).
// Each estimate is a mean of independent Bernoulli draws: its standard error
// is sqrt(P (1 - P) / n) <= 0.5 / sqrt(n) = 0.0028 absolute (tested against
// closed forms with equal p and against exact sums on small skewed layers).
// Note the inclusion probability of an expert under successive sampling is
// not top_k x p_e (a hot expert saturates at 1): the expert GEMMs still take
// each GPU's load factor from the shares; only DeepEP's bytes use these.
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/moe_dispatch.hpp"

namespace trainsim::workloads {

inline constexpr int kSkewedTouchSamples = 32768;

// TouchProbabilities: workloads/moe_dispatch.hpp.
// `share`: the layer's expert shares (experts entries). `nodes` as the EP
// ranks lie: nodes.nodes x nodes.ranks_per_node = ep.
TouchProbabilities skewed_touch_probabilities(const MoeSpec& moe, int ep, const EpNodes& nodes,
                                              const std::vector<double>& share,
                                              int samples = kSkewedTouchSamples);

}  // namespace trainsim::workloads
