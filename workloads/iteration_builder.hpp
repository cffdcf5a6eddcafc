#pragma once
// Turns (model, plan, cluster, cost model) into the task graph of one
// training iteration: the schedule's compute ops on every GPU, the pipeline
// sends between stages, the TP all-reduces after every compute op, the DP
// gradient all-reduce after the last backward and the optimizer step.
#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

// Preconditions (the scenario validator checks them with clear messages):
// plan.gpu_count() == cluster.gpu_count(), layers divisible by pp, global
// batch divisible by micro-batch x dp.
TaskGraph build_iteration(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, const CostModel& cost);

// Per-GPU bytes the pipeline sends between stages per micro-batch: the
// b x s x h bf16 activation, split over the TP group (Megatron's
// scatter-gather of pipeline tensors).
double pipeline_message_bytes(const ModelSpec& model, const ParallelPlan& plan);
// Bytes of one TP all-reduce (the b x s x h bf16 activation).
double tp_allreduce_bytes(const ModelSpec& model, const ParallelPlan& plan);
// Parameters held by one GPU of pipeline stage `stage`.
double stage_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage);

}  // namespace trainsim::workloads
