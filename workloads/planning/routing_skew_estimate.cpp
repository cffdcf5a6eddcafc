#include "workloads/planning/routing_skew_estimate.hpp"

#include <algorithm>

#include "workloads/expert_routing.hpp"

namespace trainsim::workloads {

RoutingSkewEstimate::RoutingSkewEstimate(const ModelSpec& model, const ParallelPlan& plan)
    : model_(model), ep_(plan.ep), dispatcher_(plan.moe_dispatcher) {
  // As the graph builder decides it (iteration_builder.cpp, imbalanced_).
  if (!model.is_moe() || plan.ep <= 1 || !model.moe.dropless || model.moe.routing.balanced())
    return;
  const ExpertLoads loads = expert_loads(model);
  busiest_.assign(loads.share.size(), 1.0);
  for (std::size_t l = 0; l < loads.share.size(); ++l) {
    if (loads.share[l].empty())
      continue;
    const std::vector<double> f = rank_load_factors(loads.share[l], plan.ep);
    busiest_[l] = *std::max_element(f.begin(), f.end());
  }
}

double RoutingSkewEstimate::busiest(int layer) const {
  return active() ? busiest_.at(static_cast<std::size_t>(layer)) : 1.0;
}

double RoutingSkewEstimate::extra_compute_s(PipeOpKind kind, const StageSlice& slice, const CostModel& cost,
                                            const platforms::GpuSpec& gpu) const {
  if (!active())
    return 0;
  double extra = 0;
  for (int l : moe_layer_indices(model_, slice))
    extra += cost.moe_load_extra_s(kind, busiest(l), gpu);
  return extra;
}

double RoutingSkewEstimate::exchange_factor(const StageSlice& slice) const {
  if (!active())
    return 1;
  const std::vector<int> layers = moe_layer_indices(model_, slice);
  if (layers.empty())
    return 1;
  const double n = ep_;
  double sum = 0;
  for (int l : layers) {
    const double f = busiest(l);
    sum += dispatcher_ == MoeDispatcher::deepep ? f : ((n - 2) * f + n) / (2 * (n - 1));
  }
  return sum / static_cast<double>(layers.size());
}

}  // namespace trainsim::workloads
