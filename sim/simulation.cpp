#include "sim/simulation.hpp"

#include "sim/cluster_zone.hpp"
#include "sim/cost_model_choice.hpp"
#include "sim/engine_setup.hpp"
#include "sim/gpu_energy.hpp"
#include "sim/replay.hpp"
#include "workloads/iteration_builder.hpp"

namespace trainsim::sim {

workloads::TaskGraph build_task_graph(const Scenario& scenario) {
  const auto cost = make_cost_model(scenario);
  return workloads::build_iteration(scenario.model, scenario.plan, scenario.cluster, *cost);
}

SimulationResult simulate(const Scenario& scenario) {
  SimulationResult result;
  result.graph = build_task_graph(scenario);

  auto engine = make_engine();
  enable_gpu_energy();
  // The engine owns its root netzone and frees it on destruction.
  auto* zone = new ClusterZone(scenario.cluster);
  result.timeline = replay(result.graph, *zone);
  result.timeline.gpu_energy_J = consumed_energy_J(*zone);
  result.summary =
      analysis::summarize(result.graph, result.timeline, scenario.model, scenario.plan, scenario.cluster);
  return result;
}

}  // namespace trainsim::sim
