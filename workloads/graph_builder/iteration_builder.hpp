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

// Preconditions (the scenario loader checks them with clear messages;
// here they throw std::invalid_argument): plan.gpu_count() ==
// cluster.gpu_count(), workloads::plan_problems(model, plan) empty
// (workloads/plan_checks.hpp), cp >= 1 and zero_stage in 0..3. `reserve`:
// the graph's counts when the caller knows them (room made before
// building; the graph is the same whatever it says).
TaskGraph build_iteration(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, const CostModel& cost,
                          const GraphCounts& reserve = {});

}  // namespace trainsim::workloads
