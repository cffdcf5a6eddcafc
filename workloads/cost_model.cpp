#include "workloads/cost_model.hpp"

namespace trainsim::workloads {

AnalyticCostModel::AnalyticCostModel(ModelSpec model, ParallelPlan plan, std::optional<double> efficiency)
    : model_(std::move(model)), plan_(plan), efficiency_(efficiency) {}

double AnalyticCostModel::efficiency(const platforms::GpuSpec& gpu) const {
  return efficiency_.value_or(gpu.matmul_efficiency);
}

double AnalyticCostModel::forward_flops(const StageSlice& slice) const {
  const double b = plan_.micro_batch_size;
  double flops = slice.layers * model_.layer_forward_flops(b);
  if (slice.logits)
    flops += model_.logits_forward_flops(b);
  return flops / plan_.tp;
}

OpCost AnalyticCostModel::forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const double flops = forward_flops(slice);
  return {flops / (gpu.peak_bf16_flops * efficiency(gpu)), flops, flops};
}

OpCost AnalyticCostModel::backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const double model_flops = 2 * forward_flops(slice);
  double recomputed = 0;
  switch (plan_.recompute) {
    case Recompute::none:
      break;
    case Recompute::selective:
      recomputed = slice.layers * model_.attention_core_forward_flops(plan_.micro_batch_size) / plan_.tp;
      break;
    case Recompute::full:
      recomputed = slice.layers * model_.layer_forward_flops(plan_.micro_batch_size) / plan_.tp;
      break;
  }
  const double hardware_flops = model_flops + recomputed;
  return {hardware_flops / (gpu.peak_bf16_flops * efficiency(gpu)), model_flops, hardware_flops};
}

OpCost AnalyticCostModel::optimizer(double parameters, const platforms::GpuSpec& gpu) const {
  return {parameters * kOptimizerBytesPerParameter / gpu.hbm_bandwidth_Bps, 0, 0};
}

}  // namespace trainsim::workloads
