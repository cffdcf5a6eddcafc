#pragma once
// What a reporter needs to know about the run besides its records: the
// scenario's name and the specs it was built from.
#include <string>

#include "analysis/balance_outcome.hpp"
#include "platforms/cluster_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

struct RunContext {
  std::string scenario_name;
  std::string scenario_file;
  const platforms::ClusterSpec& cluster;
  const workloads::ModelSpec& model;
  const workloads::ParallelPlan& plan;
  const workloads::TaskGraph& graph;
  // `trainsim run --balance auto`: the even and balanced splits (null
  // otherwise).
  const BalanceOutcome* balance = nullptr;
};

}  // namespace trainsim::analysis
