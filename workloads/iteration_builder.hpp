#pragma once
// Turns (model, plan, cluster, cost model) into the task graph of one
// training iteration: the schedule's compute ops on every GPU (forward, full
// backward, or the zero-bubble split into input gradient and weight
// gradient, per model chunk; split per layer for FSDP and gradient buckets,
// and into attention core + rest under ring attention), the pipeline sends
// between the ranks holding consecutive virtual stages, BPipe's activation
// evictions and reloads, the TP collectives after every compute op that has
// them (all-reduce, or reduce-scatter + all-gather with sequence
// parallelism), the ring-attention key/value exchange of context
// parallelism, the data-parallel gradient synchronisation (all-reduce, ZeRO
// reduce-scatter + all-gather, FSDP's per-layer gathers and reduce-scatters,
// in buckets or not), the optimizer step, and every task's memory events
// (workloads/memory_model.hpp). docs/parallelism.md has the details.
#include <string>

#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

// Preconditions (the scenario validator checks them with clear messages;
// here they throw std::invalid_argument): plan.gpu_count() ==
// cluster.gpu_count(), partition_problem() empty (layers divisible by pp x
// virtual_stages or a valid plan.stage_layers; global batch divisible by
// micro-batch x dp or a valid plan.dp_micro_batches), schedule_problems(plan)
// empty, cp >= 1 and zero_stage in 0..3.
TaskGraph build_iteration(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, const CostModel& cost);

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

// Why the plan's layer partition (stage_layers or the even split) or its
// micro-batch shares (dp_micro_batches or the even share) cannot be built,
// in a few words; empty when they can. The scenario loader gives the
// user-facing messages; this is the builder's precondition.
std::string partition_problem(const ModelSpec& model, const ParallelPlan& plan);

// Per-GPU bytes the pipeline sends between stages per micro-batch: the
// b x s x h bf16 activation, split over the TP group (Megatron's
// scatter-gather of pipeline tensors), s / cp tokens with context
// parallelism.
double pipeline_message_bytes(const ModelSpec& model, const ParallelPlan& plan);
// Bytes of one TP all-reduce (the b x s x h bf16 activation; s / cp tokens
// with context parallelism).
double tp_allreduce_bytes(const ModelSpec& model, const ParallelPlan& plan);
// The layers, embedding and logits of virtual stage `virtual_stage` (of
// pp x virtual_stages): plan.stage_layers' entry or the even share, the
// embedding on the first, the logits on the last.
StageSlice virtual_stage_slice(const ModelSpec& model, const ParallelPlan& plan, int virtual_stage);
// Parameters held by one GPU of pipeline rank `stage`: the layers of all its
// chunks, plus the embedding / logits when it holds the first / last virtual
// stage (with a V-shaped placement rank 0 holds both).
// MoE models count each layer's routed experts / ep (expert parallelism).
double stage_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage);
// Of those, the routed experts' parameters (0 for a dense model).
double stage_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage);

}  // namespace trainsim::workloads
