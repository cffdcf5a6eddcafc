#include "sim/scenario/cost_model_choice.hpp"

#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"

namespace trainsim::scenario {

// The per-op model by default; `cluster.compute_efficiency` asks for the flat
// one (every FLOP at that fraction of peak). Context parallelism is applied
// by the builder (it divides every op by cp), not here.
std::unique_ptr<workloads::CostModel> make_cost_model(const Scenario& scenario) {
  if (scenario.compute_efficiency)
    return std::make_unique<workloads::AnalyticCostModel>(scenario.model, scenario.plan,
                                                          scenario.compute_efficiency);
  return std::make_unique<workloads::PerOpCostModel>(
      scenario.model, scenario.plan,
      workloads::PerOpCostModel::Options{.sequence_parallel = scenario.plan.sequence_parallel});
}

}  // namespace trainsim::scenario
