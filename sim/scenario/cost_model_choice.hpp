#pragma once
// The cost model a scenario is simulated with, in one place: the simulation
// and the memory check before it (which needs ZB-V's cost-driven op order)
// must use the same one.
#include <memory>

#include "sim/scenario/scenario.hpp"
#include "workloads/cost_model.hpp"

namespace trainsim::scenario {

std::unique_ptr<workloads::CostModel> make_cost_model(const Scenario& scenario);

}  // namespace trainsim::scenario
