#include "sim/simulation.hpp"

#include "sim/cluster_zone.hpp"
#include "sim/engine_setup.hpp"
#include "sim/replay.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/iteration_builder.hpp"

namespace trainsim::sim {

SimulationResult simulate(const Scenario& scenario) {
  SimulationResult result;
  // The per-op model by default; `cluster.compute_efficiency` asks for the
  // flat one (every FLOP at that fraction of peak).
  std::unique_ptr<workloads::CostModel> cost;
  if (scenario.compute_efficiency)
    cost = std::make_unique<workloads::AnalyticCostModel>(scenario.model, scenario.plan,
                                                          scenario.compute_efficiency);
  else
    cost = std::make_unique<workloads::PerOpCostModel>(scenario.model, scenario.plan);
  result.graph = workloads::build_iteration(scenario.model, scenario.plan, scenario.cluster, *cost);

  auto engine = make_engine();
  // The engine owns its root netzone and frees it on destruction.
  auto* zone = new ClusterZone(scenario.cluster);
  result.timeline = replay(result.graph, *zone);
  result.summary =
      analysis::summarize(result.graph, result.timeline, scenario.model, scenario.plan, scenario.cluster);
  return result;
}

}  // namespace trainsim::sim
