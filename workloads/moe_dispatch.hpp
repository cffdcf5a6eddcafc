#pragma once
// What a MoE layer's dispatch and combine move between the GPUs of an EP
// group (plan.moe_dispatcher, model.moe.max_nodes_per_token). The
// collective layer routes these bytes (sim/collectives/algorithms/direct.cpp
// for all_to_all, deepep.cpp for DeepEP); this file only counts them.
//
// all_to_all (Megatron's alltoall dispatcher, NCCL all-to-all): every routed
// copy of a token travels to its expert's GPU, top_k copies per token in
// BF16 (workloads/expert_parallel.hpp, ep_all_to_all_bytes).
//
// deepep (DeepEP, DeepSeek-V3 Section 3.2.2): a token travels once to each
// GPU holding at least one of its experts (the GPU copies it to its local
// experts), and across nodes once to each node holding at least one: over
// RDMA to the GPU of the sender's local index on that node, which forwards
// it over NVLink to the node's GPUs that need it. The combine returns each
// GPU's (locally summed) outputs the same way back. Under precision fp8 the
// dispatch moves FP8 activations with one FP32 scale per 128 channels
// (1 + 4/128 bytes per element: DeepEP's FP8 dispatch), the combine BF16.
//
// Which GPUs and nodes a token touches, under balanced routing with
// node-limited routing (DeepSeek-V3's rule: the M nodes of a token first,
// then its top_k experts among theirs): the token's M nodes taken uniformly
// among the group's N nodes, its top_k experts uniformly without
// replacement among the M x E_n experts of those nodes (E_n = experts per
// node). With e experts per GPU and A = M E_n,
//   P(a given node is touched) = M / N x (1 - C(A - E_n, k) / C(A, k))
//   P(a given GPU is touched)  = M / N x (1 - C(A - e,   k) / C(A, k))
// (M = N without a limit). DeepSeek-V3 (E 256, top-8, EP 64 over 8 nodes,
// M 4): 3.18 other nodes and 7.36 GPUs per token, against 7 copies to
// other nodes and 8 in all for all_to_all.
//
// Group-limited routing (model.moe.router_num_groups, router_group_topk:
// Megatron's) bounds the GPUs and nodes a token reaches in its own way:
// workloads/group_limited_routing.hpp, which these touch probabilities
// defer to when the keys are set.
//
// Imbalanced routing (model.moe.routing): a skewed layer's touch
// probabilities are those of a top_k router drawing without replacement in
// proportion to the experts' shares, per GPU j (rho_j) and per node (nu_n),
// with the node and group limits as above (workloads/skewed_touch.hpp,
// estimated by a seeded Monte Carlo); GPU j then receives T h rho_j per
// pass from each sender. Balanced layers keep the closed forms.
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

// How an EP group lies over NVLink domains (nodes): `nodes` domains of
// `ranks_per_node` consecutive members each. ranks_per_node 0: the members
// are not spread that way (not consecutive, or unequal counts).
struct EpNodes {
  int nodes = 1;
  int ranks_per_node = 1;
  bool uniform() const { return ranks_per_node > 0; }
};
// From the NVLink domain of each member, in group order.
EpNodes ep_nodes_of(const std::vector<int>& member_domains);

// C(a - b, k) / C(a, k): the chance that k draws without replacement from a
// items all miss a given set of b of them.
double draws_all_miss(int a, int b, int k);

// The nodes a token may reach: max_nodes_per_token, or every node of the group.
int nodes_per_token(const MoeSpec& moe, const EpNodes& nodes);
// P(a token has at least one expert on a given node / GPU of its group);
// under group-limited routing (model.moe.router_num_groups) the model of
// workloads/group_limited_routing.hpp.
double node_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes);
double rank_touch_probability(const MoeSpec& moe, int ep, const EpNodes& nodes);

// Tokens each EP rank dispatches per pass: b s / cp, / tp under sequence
// parallelism.
double ep_tokens_per_rank(const ModelSpec& model, const ParallelPlan& plan);
// Bytes per hidden element of the dispatch: 1 + 4/128 under fp8 with
// deepep (FP8 with a scale per 128 channels), else 2 (BF16).
double dispatch_element_bytes(const ParallelPlan& plan);
inline constexpr double kCombineElementBytes = 2;  // BF16 outputs (and their gradients)

// One deepep exchange of a MoE op: per pass pair of each of its layers, a
// dispatch-direction pass (the forward dispatch, or the backward's
// gradients of the combine) and a combine-direction pass.
struct DeepepTraffic {
  // n x n row-major in EP-rank order, summed over the op's passes:
  // dispatch[i n + j] the bytes of i's tokens delivered to GPU j,
  // combine[i n + j] the bytes of their outputs GPU j returns to i.
  std::vector<double> dispatch;
  std::vector<double> combine;
  // RDMA bytes to a node per byte delivered to that node's GPUs:
  // P(node touched) / (ranks_per_node x P(GPU touched)), <= 1.
  double node_share = 1;
  // With a skewed layer: the same per node (in EP-rank order), each
  // node's own touch probabilities summed over the layers; empty otherwise.
  std::vector<double> node_shares;
};
// Under skewed routing, per EP rank (expert set of E / ep experts) and per
// node: P(a token touches it) (workloads/skewed_touch.hpp).
struct TouchProbabilities {
  std::vector<double> rank;
  std::vector<double> node;
};
// The expert sets a deepep exchange's touch probabilities are over: the EP
// ranks, ranks_per_node / expert_tp of them a node when the dispatch spans
// expert TP (dispatch_spans_expert_tp).
EpNodes deepep_expert_sets(const ModelSpec& model, const ParallelPlan& plan, const EpNodes& nodes);

// One MoE layer of the op: its experts' shares of the token copies
// (workloads/expert_routing.hpp, experts entries), empty when balanced;
// `touch` its touch probabilities over deepep_expert_sets when the caller
// has them already (empty: computed from the shares).
struct DeepepLayer {
  std::vector<double> expert_share;
  TouchProbabilities touch;
};
// `layers` the MoE layers of the op; `pass_pairs` the pass pairs per layer.
// A skewed layer's rows use its own touch probabilities (row bytes i -> j =
// tokens_i x h x rho_j x element bytes), and the exchange's node_shares are
// per node n the ratio of its totals over the layers: sum of nu_n /
// (members per set x sum of rho_j over the sets on n), so that the RDMA
// bytes into n are tokens x nu_n whatever its GPUs receive (node_share
// keeps the ratio of the totals over every node).
// With 1 < expert_tp < tp (dispatch_spans_expert_tp, workloads/expert_parallel.hpp)
// the exchange is over the etp x ep GPUs of a block (`nodes` their spread):
// member m holds shards of EP rank m / etp's experts, and every token goes
// to each of the etp members of each expert set it touches, so
//   row bytes i -> j   = tokens_i x h x P(set j / etp touched) x element bytes
//   node_share         = P(node touched) / (members per node x P(set touched))
// with the touch probabilities of ep sets over the nodes, members per node
// / etp sets on each.
DeepepTraffic deepep_traffic(const ModelSpec& model, const ParallelPlan& plan, const EpNodes& nodes,
                             const std::vector<DeepepLayer>& layers, int pass_pairs);

}  // namespace trainsim::workloads
