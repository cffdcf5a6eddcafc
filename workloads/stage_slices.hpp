#pragma once
// The geometry of a plan's pipeline, shared by the graph builder, the memory
// model, the plan search and the stage balancer: which layers each virtual
// stage holds, how many parameters a GPU of a stage holds, the bytes of a
// pipeline message and of a TP all-reduce, and the schedule a plan replays.
#include <string>
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

// The rank / chunk layout of the plan's schedule, without its op lists.
PipelineSchedule layout_of(const ParallelPlan& plan);

// The schedule build_iteration replays: the plan's generator, with ZB-V's
// greedy fed the cost model's per-chunk times (averaged over virtual stages,
// as the reference feeds it its measured means), the pipeline transfer time
// between the first two ranks, and the model's activation sizes. With
// context parallelism the times are one CP rank's.
PipelineSchedule schedule_for(const ModelSpec& model, const ParallelPlan& plan,
                              const platforms::ClusterSpec& cluster, const CostModel& cost);
// The same for a pipeline of `micro_batches` micro-batches (the schedule of
// one data-parallel replica under plan.dp_micro_batches).
PipelineSchedule schedule_for(const ModelSpec& model, const ParallelPlan& plan,
                              const platforms::ClusterSpec& cluster, const CostModel& cost,
                              int micro_batches);

// Per-GPU bytes the pipeline sends between stages per micro-batch: the
// b x s x h bf16 activation, split over the TP group (Megatron's
// scatter-gather of pipeline tensors), s / cp tokens with context
// parallelism.
double pipeline_message_bytes(const ModelSpec& model, const ParallelPlan& plan);
// Bytes of one TP all-reduce (the b x s x h bf16 activation; s / cp tokens
// with context parallelism).
double tp_allreduce_bytes(const ModelSpec& model, const ParallelPlan& plan);
// Multi-head latent attention under sequence parallelism: the mean bytes of
// one folded TP pass (`pass` reduce-scatter or all-gather) of an op of
// `kind`. Megatron's MLA gathers, before attention, not the hidden state
// but what its duplicated down projections made of each rank's s / t
// tokens: the query latent (or the hidden state, without query
// compression), the key/value latent and the rotary key, w = (r_q or h) +
// r_kv + d_rope per token; the output projection still reduce-scatters h.
// Per layer the forward gathers w and h and reduce-scatters h twice, the
// backward the mirror (gathers h twice, reduce-scatters w and h), full
// recomputation adds a forward's; the builder folds them into passes of
// one size, the mean.
double mla_sequence_parallel_pass_bytes(const ModelSpec& model, const ParallelPlan& plan, CollectiveOp pass,
                                        PipeOpKind kind);
// The layers, embedding and logits of virtual stage `virtual_stage` (of
// pp x virtual_stages): plan.stage_layers' entry or the even share, the
// embedding on the first, the logits on the last.
StageSlice virtual_stage_slice(const ModelSpec& model, const ParallelPlan& plan, int virtual_stage);
// Transformer layers `slice` runs: its layers, and on the last stage the
// MTP modules' (model.mtp_depth), each with the TP collectives of a layer.
int transformer_layers_of(const ModelSpec& model, const StageSlice& slice);
// Its MoE layers, the MTP modules' included (when the model's last layer
// is a MoE layer): the EP all-to-alls of an op over it.
int moe_layers_of(const ModelSpec& model, const StageSlice& slice);
// The same MoE layers by index, in order: the model's, then MTP module k as
// layers + k (the indices expert_loads and the memory model use).
std::vector<int> moe_layer_indices(const ModelSpec& model, const StageSlice& slice);
// The MTP modules' parameters on one GPU of the last stage (experts / ep,
// everything / tp); 0 for a slice without the logits.
double mtp_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, const StageSlice& slice);
double mtp_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan,
                                     const StageSlice& slice);
// Parameters of `slice` held by one GPU: its layers (MoE: routed experts /
// ep), plus the embedding / logits when the slice has them, over tp.
double slice_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, const StageSlice& slice);
// Parameters held by one GPU of pipeline rank `stage`: the layers of all its
// chunks, plus the embedding / logits when it holds the first / last virtual
// stage (with a V-shaped placement rank 0 holds both).
// MoE models count each layer's routed experts / ep (expert parallelism).
double stage_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage);
// Of those, the routed experts' parameters (0 for a dense model).
double stage_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage);

namespace detail {

// schedule_for, given the cost of one GPU (context parallelism applied), for
// a pipeline running `micro_batches` micro-batches.
PipelineSchedule schedule_for_gpu_costs(const ModelSpec& model, const ParallelPlan& plan,
                                        const platforms::ClusterSpec& cluster, const CostModel& cost,
                                        int micro_batches);

}  // namespace detail
}  // namespace trainsim::workloads
