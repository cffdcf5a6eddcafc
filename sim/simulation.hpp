#pragma once
// One scenario from specs to results: build the task graph, build the SimGrid
// platform, replay, summarize. The CLI and the scenario tests call this.
#include <memory>

#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "sim/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

struct SimulationResult {
  workloads::TaskGraph graph;
  analysis::Timeline timeline;
  analysis::Summary summary;
};

// The task graph of one iteration of `scenario` (deterministic: the same
// scenario always gives the same graph). Needs no SimGrid engine.
workloads::TaskGraph build_task_graph(const Scenario& scenario);

// Runs one simulated iteration of `scenario`. One call per process.
SimulationResult simulate(const Scenario& scenario);

}  // namespace trainsim::sim
