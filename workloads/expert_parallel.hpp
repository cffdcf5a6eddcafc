#pragma once
// Expert parallelism for mixture-of-experts models (model.moe,
// plan.expert_parallel). Megatron-core's layout with expert tensor
// parallelism equal to tp: the routed experts of each MoE layer are spread
// over the ep GPUs of an EP group (ep consecutive positions of the dp x cp
// dimension, same pipeline and TP rank), each GPU holding experts / ep of
// them. In every MoE layer the EP group exchanges tokens twice in the
// forward (dispatch before the experts, combine after them) and twice in
// the backward (their gradients), as all-to-alls on the `ep` stream.
// Dense parameters are replicated over the whole data-parallel group and
// reduce their gradients over it; expert parameters are replicated only
// over the expert data-parallel group (dp x cp / ep GPUs, positions equal
// modulo ep) and reduce over that. docs/moe.md.
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {

// Parameters of layer `layer` on one GPU: dense ones / tp, routed experts
// / (expert_tp x ep).
double layer_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int layer);
// Of those, the routed experts' (expert data-parallel, sharded by ep).
double layer_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int layer);

// Bytes each EP rank puts into one dispatch (or combine) all-to-all: its
// tokens' top_k copies of the hidden state in bf16, padded to the capacity
// factor, 2 x b x s / cp x top_k x h x capacity, over tp with sequence
// parallelism (each TP rank dispatches its own share of the tokens).
double ep_all_to_all_bytes(const ModelSpec& model, const ParallelPlan& plan);
// All-to-alls one op runs per EP group over `moe_layers` MoE layers:
// forward 2 per layer (dispatch, combine), backward and zero-bubble input
// gradient 2 per layer (4 with full recomputation, which redoes the
// forward's), weight gradient none.
int ep_all_to_alls(const ParallelPlan& plan, PipeOpKind kind, int moe_layers);

// Expert tensor parallelism between 1 and tp (Megatron's
// MoEAlltoAllTokenDispatcher with an expert-TP group of 1 < etp < tp):
// after the dispatch all-to-all each expert-TP group all-gathers the
// tokens its members received (gather_from_sequence_parallel_region over
// the expert-TP group), its experts run on them at expert_ffn / etp, and
// a reduce-scatter (reduce_scatter_to_sequence_parallel_region) hands each
// member its tokens' partial sums back before the combine. The backward
// runs the pair again (the gradient of an all-gather is a reduce-scatter
// and vice versa). With etp = tp trainsim keeps the dense TP pair around
// the MLP (today's model), with etp = 1 there is none.
// Not with moe_dispatcher deepep: there Megatron's flex dispatcher sends
// each token to every GPU of its experts' expert-TP groups directly (see
// dispatch_spans_expert_tp).
bool has_expert_tp_collectives(const ModelSpec& model, const ParallelPlan& plan);
// DeepEP with 1 < expert_tp < tp (Megatron's MoEFlexTokenDispatcher over
// its tp_ep group, router_topk x etp copies of num_experts x etp expert
// shards): the dispatch and combine run over the etp x ep GPUs of an
// expert-TP x EP block, each token delivered to each of the etp GPUs that
// hold shards of a chosen expert, and no expert-TP all-gather or
// reduce-scatter follows.
bool dispatch_spans_expert_tp(const ModelSpec& model, const ParallelPlan& plan);
// nccl-tests size of one such all-gather or reduce-scatter: the gathered
// buffer, etp x the bytes a member received (ep_all_to_all_bytes).
double expert_tp_collective_bytes(const ModelSpec& model, const ParallelPlan& plan);
// All-gathers (and as many reduce-scatters) an op runs over `moe_layers`
// MoE layers: one per layer per pass, as many as its dispatches.
int expert_tp_collective_pairs(const ParallelPlan& plan, PipeOpKind kind, int moe_layers);

// The groups the MoE dispatch and combine of pipeline rank `pp_rank` run
// over: its EP groups, or with dispatch_spans_expert_tp its expert-TP x EP
// blocks (etp x ep consecutive GPUs of the stage in Megatron's expert rank
// order tp-ep-dp: expert-TP rank fastest, so member m holds the experts of
// EP rank m / etp).
std::vector<std::vector<int>> moe_dispatch_groups(const ModelSpec& model, const ParallelPlan& plan,
                                                  int pp_rank);
// The EP groups of pipeline rank `pp_rank` (GPU ids, EP rank order):
// expert-TP rank major, expert data-parallel index minor (with expert_tp =
// tp: TP rank, then blocks of ep consecutive dp x cp positions).
std::vector<std::vector<int>> expert_parallel_groups(const ParallelPlan& plan, int pp_rank);
// The expert data-parallel groups of pipeline rank `pp_rank`: the GPUs
// holding the same experts (same expert-TP and EP rank).
std::vector<std::vector<int>> expert_data_parallel_groups(const ParallelPlan& plan, int pp_rank);
// A GPU's rank in its EP group (which E / ep experts it holds).
int expert_parallel_rank_of(const ParallelPlan& plan, int gpu);
// A GPU's rank in its expert tensor-parallel group.
int expert_tensor_parallel_rank_of(const ParallelPlan& plan, int gpu);

}  // namespace trainsim::workloads
