#pragma once
// The plan search behind `trainsim plan`: from a model, a cluster, a GPU
// count and a global batch to the candidate plans, each checked by the
// scenario loader exactly as `trainsim run` checks it (plan rules, then the
// memory model), estimated (workloads/planning/plan_estimate.hpp) and ranked. The
// best K are then simulated as study points (sim/study/point_runner.hpp);
// the CLI (sim/cli/plan_command.cpp) composes the two and reports.
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/scenario/scenario.hpp"
#include "workloads/planning/plan_estimate.hpp"
#include "workloads/planning/plan_space.hpp"

namespace trainsim::sim {

struct PlanSearchRequest {
  std::string model;  // a model preset, or a YAML file whose `model` section is used ("" : the scenario's)
  std::string
      cluster;  // a cluster preset, or a YAML file whose `cluster` section is used ("" : the scenario's)
  std::string scenario;  // optional base scenario: its other keys (plan options, seed) apply to every plan
  int gpus = 0;
  int global_batch_size = 0;  // 0: the base scenario's plan.global_batch_size
  int seq_len = 0;            // 0: the model's
  // --set KEY=VALUE on the base. On a key the search varies (plan.tp,
  // plan.pp, plan.micro_batch_size, plan.schedule, plan.virtual_stages,
  // plan.recompute, plan.zero_stage, plan.sequence_parallel,
  // plan.expert_parallel) it fixes that
  // axis to the value instead; plan.dp is derived and may not be set.
  std::vector<std::string> overrides;
  std::string fidelity = "fast";  // cluster.collectives.fidelity of the simulations ("": the cluster's)
  // Told after each enumerated plan is checked and estimated (the CLI's
  // progress line): plans checked so far, plans to check.
  std::function<void(std::size_t checked, std::size_t total)> on_progress;
};

struct PlanCandidate {
  workloads::ParallelPlan plan;  // as the loader resolved it
  std::string key;               // workloads::plan_key
  std::string label;             // workloads::plan_label
  workloads::PlanEstimate estimate;
};

struct MemoryPruned {
  std::string key;
  std::string label;
  std::string message;  // the loader's first "does not fit" message
};

struct PlanSearch {
  scenario::Scenario base;  // the cluster and model every plan runs on (its plan is a placeholder)
  std::string model_source;
  std::string cluster_source;
  std::string fidelity;
  std::vector<PlanCandidate> ranked;  // feasible plans, by estimate, ties by key
  std::array<std::size_t, workloads::kPruneReasonCount> pruned{};
  std::size_t enumerated = 0;
  std::vector<MemoryPruned> memory_pruned;    // in enumeration order
  std::vector<std::string> invalid_examples;  // the checks' message for a few invalid_plan prunes
  YAML::Node document;                        // the base scenario document, sized to the GPUs
  std::string description;                    // "<model> on N x <gpu> GPUs, global batch B"
};

// Builds the space, checks, estimates and ranks every plan. Throws
// InputError for bad requests (unknown model or cluster, a GPU count the
// cluster cannot have, malformed overrides), each problem named.
PlanSearch prepare_plan_search(const PlanSearchRequest& request);

// A candidate as a scenario file, runnable alone with `trainsim run` (the
// base document with the candidate's plan keys set).
std::string scenario_yaml(const PlanSearch& search, const PlanCandidate& candidate);

}  // namespace trainsim::sim
