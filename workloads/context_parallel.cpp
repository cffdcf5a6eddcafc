#include "workloads/context_parallel.hpp"

#include "workloads/attention.hpp"

namespace trainsim::workloads {

OpCost ContextParallelCost::divided(OpCost cost) const {
  return {cost.duration_s / cp_, cost.model_flops / cp_, cost.hardware_flops / cp_,
          cost.memory_bound_fraction, cost.tp_overlap_s / cp_};
}

OpCost ContextParallelCost::forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  return divided(inner_.forward(slice, gpu));
}
OpCost ContextParallelCost::backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  return divided(inner_.backward(slice, gpu));
}
OpCost ContextParallelCost::backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  return divided(inner_.backward_input(slice, gpu));
}
OpCost ContextParallelCost::backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  return divided(inner_.backward_weight(slice, gpu));
}
// Every CP rank holds the whole stage's parameters (the DP group spans CP):
// the optimizer step is not divided.
OpCost ContextParallelCost::optimizer(double parameters, const platforms::GpuSpec& gpu) const {
  return inner_.optimizer(parameters, gpu);
}

double cp_exchange_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  // Keys and values of every token of the micro-batch (MHA: 2 kv_heads d;
  // MLA: the up-projected n (d_qk + d_v)), in bf16, this TP rank's heads.
  const double kv = traits_of(model.attention).key_value_elements(model);
  return 2.0 * plan.micro_batch_size * model.seq_len * kv / plan.tp;
}

int cp_exchange_passes(const ParallelPlan& plan, PipeOpKind kind) {
  switch (kind) {
    case PipeOpKind::forward:
      return 1;
    case PipeOpKind::backward:
    case PipeOpKind::backward_input:
      return plan.recompute == Recompute::none ? 2 : 3;
    case PipeOpKind::backward_weight:
      return 0;
  }
  return 0;
}

double attention_share(const ModelSpec& model, const ParallelPlan& plan, const StageSlice& slice) {
  const double b = plan.micro_batch_size;
  const double attention = slice.layers * model.attention_core_forward_flops(b);
  double total = model.layers_forward_flops(b, slice.first_layer, slice.layers);
  if (slice.logits)
    total += model.logits_forward_flops(b);
  return total > 0 ? attention / total : 0.0;
}

}  // namespace trainsim::workloads
