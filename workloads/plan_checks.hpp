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

}  // namespace trainsim::workloads
