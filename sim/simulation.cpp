#include "sim/simulation.hpp"

#include "sim/cluster_zone.hpp"
#include "sim/engine_setup.hpp"
#include "sim/gpu_energy.hpp"
#include "sim/replay.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/iteration_builder.hpp"

namespace trainsim::sim {

SimulationResult simulate(const Scenario& scenario) {
  SimulationResult result;
  const workloads::AnalyticCostModel cost(scenario.model, scenario.plan, scenario.compute_efficiency);
  result.graph = workloads::build_iteration(scenario.model, scenario.plan, scenario.cluster, cost);

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
