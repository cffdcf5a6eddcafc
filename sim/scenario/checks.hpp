#pragma once
// The typed checks of a scenario: what the YAML loader, plan search, the
// balance search and the Python API all call on a Scenario built however
// they like. Each returns the broken rules as problems keyed by the dotted
// key a user would change; the caller locates them (the loader through
// platforms::locate_problem, with the file:line or --set option).
#include <vector>

#include "platforms/problem.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {

// Fills in what the scenario leaves to trainsim: plan.dp "auto" (0) becomes
// GPUs / (tp x pp x cp), plan.virtual_stages 0 the schedule's default.
// Returns the problem when dp cannot be derived (then check() would only
// repeat it).
std::vector<platforms::Problem> resolve_plan(Scenario& scenario);

// Every rule that spans sections: the plan covers the cluster's GPUs
// exactly, and the plan's own rules for the model (workloads/plan_checks.hpp).
// Expects a resolved plan. The memory model's check is separate
// (sim/scenario/memory_check.hpp): a plan that breaks no rule may still not
// fit.
std::vector<platforms::Problem> check(const Scenario& scenario);

}  // namespace trainsim::scenario
