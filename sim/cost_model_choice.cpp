#include "sim/cost_model_choice.hpp"

namespace trainsim::sim {

std::unique_ptr<workloads::CostModel> make_cost_model(const Scenario& scenario) {
  return std::make_unique<workloads::AnalyticCostModel>(scenario.model, scenario.plan,
                                                        scenario.compute_efficiency);
}

}  // namespace trainsim::sim
