#pragma once
// The rules a parallel plan must follow for a model, whatever the cluster:
// the batch divides into micro-batches, the layers into stages (or the
// uneven stage_layers / dp_micro_batches add up), the schedule can run,
// tensor parallelism divides the heads, and the parallelism options (SP, CP,
// EP, ZeRO, gradient buckets) fit together. Each rule is written once, here;
// the scenario loader, plan search, the balance search and the graph
// builder's preconditions all call it. Keys are the plan keys a user would
// change ("plan.pp"); messages give the bad value and what was expected.
#include <vector>

#include "platforms/problem.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

// The plan's dp must be known (not 0 for "auto"); virtual_stages 0 (not
// given, and the schedule has no default) is reported as missing.
std::vector<platforms::Problem> plan_problems(const ModelSpec& model, const ParallelPlan& plan);

// The plans plan_problems lets set plan.overlap_grad_reduce: ZeRO stages 0
// to 2 (FSDP reduce-scatters per layer anyway) whose expert TP is tp (the
// folded expert gradients reduce after the backward), with or without
// expert parallelism (dense buckets over the DP group, expert buckets over
// the expert DP groups: graph_builder/expert_parallel_grad_overlap.cpp).
// The plan search keeps a base scenario's overlap on exactly these.
bool overlap_grad_reduce_allowed(const ParallelPlan& plan);

// Likewise plan.overlap_param_gather, given overlap_grad_reduce: ZeRO 1 / 2
// without expert parallelism (a MoE model's updated parameters are gathered
// after the optimizer step).
bool overlap_param_gather_allowed(const ParallelPlan& plan);

}  // namespace trainsim::workloads
