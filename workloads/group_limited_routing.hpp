#pragma once
// Megatron-core's group-limited routing (model.moe.router_num_groups and
// router_group_topk; Megatron's --moe-router-num-groups and
// --moe-router-group-topk, megatron/core/transformer/moe/moe_utils.py,
// group_limited_topk): the E routed experts are cut into G groups of
// g = E / G consecutive experts; each token scores every group by the sum of
// its top (top_k / G') expert scores, keeps the G' best groups, and takes its
// top_k experts among the G' g experts of those. DeepSeek-V3's configuration
// has G = 8, G' = 4 (n_group, topk_group), which Megatron-Bridge maps to
// these keys. With EP rank r holding experts [r E / ep, (r + 1) E / ep),
// a group is a run of consecutive GPUs (or a share of one GPU), so the rule
// bounds the GPUs and nodes a token reaches: what DeepEP-style dispatch
// moves (workloads/moe_dispatch.hpp). NCCL all-to-all sends one copy per
// routed expert whatever the groups (the alltoall dispatcher permutes a
// token's top_k copies), so its bytes per rank pair stay 2 b s / cp x top_k
// x h / ep under balanced routing: the groups change only which experts a
// token picks, and by symmetry every expert still gets top_k / E of them.
//
// Model (balanced routing, as Megatron-Bridge's force-balanced benchmark
// rows route: random logits into this rule): a token's G' groups are
// uniform among the G; each chosen group contributes its quota of the
// top_k experts, q = top_k / G' (the group score's own count; with a
// remainder r = top_k mod G', r of the chosen groups one more), drawn
// uniformly without replacement from its g experts. For a unit (a GPU, or
// a node) of u experts aligned with the groups:
//   u >= g, the unit holds c = u / g whole groups:
//     P(touched) = 1 - C(G - c, G') / C(G, G')
//   u < g, the unit lies in one group:
//     P(touched) = G'/G x [ r/G' (1 - C(g-u, q+1)/C(g, q+1))
//                           + (1 - r/G') (1 - C(g-u, q)/C(g, q)) ]
// DGX B200 with EP 32 (8 experts a GPU, 64 a node, 4 nodes; G 8, G' 4:
// groups of half a node): P(node) = 1 - 15/70, 3.14 nodes a token (2.36
// other than the sender's, against 2.71 without the groups); P(GPU) = 1/2
// x (1 - C(24, 2)/C(32, 2)), 7.10 GPUs. Megatron's rule itself, sampled on
// random normal logits (tests/unit/workloads/group_limited_routing_test.cpp):
// 3.12 nodes and 6.85 GPUs. The quota is what the group score assumes; the
// real top_k sometimes takes 3 + 1 of two groups instead of 2 + 2, so the
// model counts nodes within 1% and GPUs up to 4% high at this layout (10%
// high when each group is one GPU's experts, where it says every copy
// reaches its own GPU).
//
// With model.moe.max_nodes_per_token M as well (trainsim's DeepSeek-V3
// node-limited rule, which must then hold whole groups: g divides a node's
// experts), a token's M nodes come first (uniform among the EP group's N),
// then min(G', M x groups a node) groups among theirs, as above, and every
// probability is M / N of the one among those nodes. A group step that
// chooses every group it may (G' = G, or G' >= M x groups a node) limits
// nothing: the touch probabilities are then max_nodes_per_token's alone
// (workloads/moe_dispatch.hpp), byte-identical to leaving the keys out.
//
// Imbalanced routing (model.moe.routing): the same rule drawn in proportion
// to the experts' shares (workloads/skewed_touch.hpp; deepep_traffic).
#include <vector>

#include "platforms/problem.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/moe_dispatch.hpp"

namespace trainsim::workloads {

// The group step bounds what a token reaches (keys set, and it does not
// choose every group it may).
bool group_limit_binds(const MoeSpec& moe, const EpNodes& nodes);

// P(a token has at least one expert on a given node / GPU of its EP group)
// under group-limited routing (the model above); only where
// group_limit_binds.
double group_limited_node_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes);
double group_limited_rank_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes);

// The rules of the keys alone (Megatron's asserts and the group score's):
// both given or neither; groups divide the experts; router_group_topk <=
// router_num_groups and <= top_k (each chosen group is scored by its top
// top_k / G' experts); top_k <= G' x the experts of a group. Keys
// "model.moe.router_num_groups" / "model.moe.router_group_topk".
std::vector<platforms::Problem> group_routing_problems(const MoeSpec& moe);

// Where the groups meet the EP layout (only for deepep, whose bytes they
// change): a group holds whole GPUs' experts or lies within one GPU's, and
// holds whole nodes' or lies within one node's; with max_nodes_per_token,
// within one node. `nodes` as the EP group lies (ep_nodes_of, uniform).
std::vector<platforms::Problem> group_layout_problems(const MoeSpec& moe, int ep, const EpNodes& nodes);

}  // namespace trainsim::workloads
