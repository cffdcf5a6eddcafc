#include "workloads/cost_model.hpp"

#include "workloads/op_selective_recompute.hpp"
#include "workloads/recompute_modules.hpp"

namespace trainsim::workloads {

AnalyticCostModel::AnalyticCostModel(ModelSpec model, ParallelPlan plan, std::optional<double> efficiency)
    : model_(std::move(model)), plan_(plan), efficiency_(efficiency) {}

double AnalyticCostModel::efficiency(const platforms::GpuSpec& gpu) const {
  return efficiency_.value_or(gpu.matmul_efficiency);
}

// The last stage's multi-token prediction modules (model.mtp_depth) ride
// with its logits: forward FLOPs, and of them the attention core.
double AnalyticCostModel::mtp_flops(const StageSlice& slice) const {
  return slice.logits ? model_.mtp_forward_flops(plan_.micro_batch_size) : 0.0;
}

double AnalyticCostModel::mtp_core_flops(const StageSlice& slice) const {
  return slice.logits ? model_.mtp_attention_core_forward_flops(plan_.micro_batch_size) : 0.0;
}

double AnalyticCostModel::forward_flops(const StageSlice& slice) const {
  const double b = plan_.micro_batch_size;
  double flops = model_.layers_forward_flops(b, slice.first_layer, slice.layers);
  if (slice.logits)
    flops += model_.logits_forward_flops(b);
  if (model_.mtp_depth > 0)
    flops += mtp_flops(slice);
  return flops / plan_.tp;
}

double AnalyticCostModel::weight_gradient_flops(const StageSlice& slice) const {
  const double b = plan_.micro_batch_size;
  double flops = model_.layers_forward_flops(b, slice.first_layer, slice.layers) -
                 slice.layers * model_.attention_core_forward_flops(b);
  if (slice.logits)
    flops += model_.logits_forward_flops(b);
  if (model_.mtp_depth > 0)
    flops += mtp_flops(slice) - mtp_core_flops(slice);
  return flops / plan_.tp;
}

double AnalyticCostModel::recomputed_flops(const StageSlice& slice) const {
  // An MTP module's layer is recomputed like the stage's layers (its
  // attention core, or its whole forward under full recomputation).
  const double b = plan_.micro_batch_size;
  const double mtp_layer = slice.logits && model_.mtp_depth > 0
                               ? model_.mtp_depth * model_.layer_forward_flops(b, model_.layers - 1)
                               : 0.0;
  switch (plan_.recompute) {
    case Recompute::none:
      return 0;
    case Recompute::selective:
      if (!plan_.recompute_modules.empty()) {  // Megatron's modules (recompute_modules.hpp)
        const int moe = model_.moe_layers_in(slice.first_layer, slice.layers);
        const int mtp = slice.logits ? model_.mtp_depth : 0;
        const bool mtp_moe = model_.mtp_layers_are_moe();
        return (slice.layers - moe + (mtp_moe ? 0 : mtp)) *
                   selective_recomputed_layer_flops(model_, plan_, false) +
               (moe + (mtp_moe ? mtp : 0)) * selective_recomputed_layer_flops(model_, plan_, true);
      }
      if (model_.mtp_depth > 0)
        return (slice.layers * model_.attention_core_forward_flops(b) + mtp_core_flops(slice)) / plan_.tp;
      return slice.layers * model_.attention_core_forward_flops(plan_.micro_batch_size) / plan_.tp;
    case Recompute::full:
      if (model_.mtp_depth > 0)
        return (model_.layers_forward_flops(b, slice.first_layer, slice.layers) + mtp_layer) / plan_.tp;
      return model_.layers_forward_flops(plan_.micro_batch_size, slice.first_layer, slice.layers) / plan_.tp;
    case Recompute::selective_op:  // wk, wo and w3 (op_selective_recompute.hpp); dense layers only
      return (slice.layers + (slice.logits ? model_.mtp_depth : 0)) *
             op_selective_recomputed_layer_flops(model_, plan_);
  }
  return 0;
}

double AnalyticCostModel::linear_forward_flops(const StageSlice& slice) const {
  const double b = plan_.micro_batch_size;
  if (model_.mtp_depth > 0)
    return (model_.layers_forward_flops(b, slice.first_layer, slice.layers) -
            slice.layers * model_.attention_core_forward_flops(b) + mtp_flops(slice) -
            mtp_core_flops(slice)) /
           plan_.tp;
  return (model_.layers_forward_flops(b, slice.first_layer, slice.layers) -
          slice.layers * model_.attention_core_forward_flops(b)) /
         plan_.tp;
}

OpCost AnalyticCostModel::timed(double model_flops, double hardware_flops, const platforms::GpuSpec& gpu,
                                double linear_flops) const {
  const double flops_per_s = gpu.peak_bf16_flops * efficiency(gpu);
  return {.duration_s = hardware_flops / flops_per_s,
          .model_flops = model_flops,
          .hardware_flops = hardware_flops,
          .tp_overlap_s = linear_flops / flops_per_s};
}

OpCost AnalyticCostModel::forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const double flops = forward_flops(slice);
  return timed(flops, flops, gpu, linear_forward_flops(slice));
}

// The recomputed linear GEMMs' FLOPs: the whole forward's under full
// recomputation, wk, wo and w3 under selective_op, none otherwise.
double AnalyticCostModel::recomputed_linear_flops(const StageSlice& slice) const {
  switch (plan_.recompute) {
    case Recompute::none:
    case Recompute::selective:
      return 0;
    case Recompute::full:
      return linear_forward_flops(slice);
    case Recompute::selective_op:
      return recomputed_flops(slice);
  }
  return 0;
}

// The linear GEMMs of a backward: input and weight gradients (twice the
// forward's), plus the recomputed ones.
OpCost AnalyticCostModel::backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const double model_flops = 2 * forward_flops(slice);
  const double linear = linear_forward_flops(slice);
  return timed(model_flops, model_flops + recomputed_flops(slice), gpu,
               2 * linear + recomputed_linear_flops(slice));
}

OpCost AnalyticCostModel::backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const double model_flops = 2 * forward_flops(slice) - weight_gradient_flops(slice);
  const double linear = linear_forward_flops(slice);
  return timed(model_flops, model_flops + recomputed_flops(slice), gpu,
               linear + recomputed_linear_flops(slice));
}

OpCost AnalyticCostModel::backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const double flops = weight_gradient_flops(slice);
  return timed(flops, flops, gpu, linear_forward_flops(slice));
}

double AnalyticCostModel::moe_load_extra_s(PipeOpKind kind, double load,
                                           const platforms::GpuSpec& gpu) const {
  if (!model_.is_moe() || load == 1)
    return 0;
  // One GPU's routed expert GEMMs in one MoE layer's forward: its share of
  // the EP group's copies (tokens x top_k x capacity) through experts of
  // (2 or 3) h f / tp weights.
  const auto& moe = model_.moe;
  const double tokens = double(plan_.micro_batch_size) * model_.seq_len;
  const double forward = 2 * tokens * moe.top_k * moe.capacity_factor * (model_.swiglu ? 3.0 : 2.0) *
                         model_.hidden * moe.expert_ffn_hidden / plan_.tp;
  const double recompute = plan_.recompute == Recompute::full ? forward : 0.0;
  double flops = 0;
  switch (kind) {
    case PipeOpKind::forward:
      flops = forward;
      break;
    case PipeOpKind::backward:
      flops = 2 * forward + recompute;
      break;
    case PipeOpKind::backward_input:
      flops = forward + recompute;
      break;
    case PipeOpKind::backward_weight:
      flops = forward;
      break;
  }
  return (load - 1) * flops / (gpu.peak_bf16_flops * efficiency(gpu));
}

OpCost AnalyticCostModel::optimizer(double parameters, const platforms::GpuSpec& gpu) const {
  return {parameters * kOptimizerBytesPerParameter / gpu.hbm_bandwidth_Bps, 0, 0, 1.0};
}

}  // namespace trainsim::workloads
