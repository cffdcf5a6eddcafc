#include "workloads/cost_model_per_op.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "workloads/op_selective_recompute.hpp"
#include "workloads/precision.hpp"
#include "workloads/recompute_modules.hpp"

namespace trainsim::workloads {
namespace {

double memory_time(double bytes, int kernels, const platforms::GpuSpec& gpu,
                   const platforms::EfficiencyProfile& profile) {
  if (bytes <= 0)
    return 0;
  // The curve is per kernel: a multi-kernel op moves bytes / kernels each.
  const double per_kernel = bytes / std::max(1, kernels);
  const double efficiency = profile.memory.peak_fraction * profile.memory.bytes.at(per_kernel);
  return bytes / (gpu.hbm_bandwidth_Bps * efficiency);
}

double matmul_efficiency(const platforms::MatmulEfficiency& e, const TransformerOp& op) {
  return e.peak_fraction * e.output_elements.at(op.m * op.n * op.batch) * e.reduction_depth.at(op.k);
}

double attention_efficiency(const platforms::AttentionKernelEfficiency& e, const TransformerOp& op) {
  return e.peak_fraction * e.seq_len.at(op.m) * e.head_dim.at(op.k);
}

// One pass: its kernels back to back on the GPU, but never faster than the
// host can launch them.
double pass_time(const std::vector<TransformerOp>& ops,
                 const std::function<bool(const TransformerOp&)>& in_pass, const platforms::GpuSpec& gpu,
                 const platforms::EfficiencyProfile& profile) {
  double device_s = 0;
  int kernels = 0;
  for (const auto& op : ops) {
    if (!in_pass(op))
      continue;
    device_s += time_op(op, gpu, profile).duration_s;
    kernels += op.kernels;
  }
  return std::max(device_s, kernels * profile.host_overhead_per_kernel_s);
}

bool is(const TransformerOp& op, OpPass pass) {
  return op.pass == pass;
}

// A dense GEMM that Transformer Engine's userbuffers overlap with a TP
// collective: every linear layer's, not the attention core's batched ones
// nor the MoE router's (its output is not TP-split) nor the experts' (their
// tokens travel by all-to-all).
bool tp_paired(const TransformerOp& op) {
  return op.kind == OpKind::matmul && !op.attention_core && op.name.rfind("router", 0) != 0 &&
         op.name.rfind("logits", 0) != 0;
}

// Device time of a pass's TP-paired GEMMs.
double linear_time_of(const std::vector<TransformerOp>& ops, OpPass pass, const platforms::GpuSpec& gpu,
                      const platforms::EfficiencyProfile& profile) {
  double s = 0;
  for (const auto& op : ops)
    if (op.pass == pass && tp_paired(op))
      s += time_op(op, gpu, profile).duration_s;
  return s;
}

}  // namespace

OpTiming time_op(const TransformerOp& op, const platforms::GpuSpec& gpu,
                 const platforms::EfficiencyProfile& profile) {
  OpTiming t;
  double peak_flops = gpu.peak_bf16_flops;
  switch (op.kind) {
    case OpKind::matmul:
    case OpKind::batched_matmul:
      if (op.fp8) {
        // The plan checks refuse FP8 on a GPU without FP8 curves or peak.
        if (!profile.matmul_fp8 || gpu.peak_fp8_flops <= 0)
          throw std::logic_error("FP8 GEMM on " + gpu.name + ", which has no FP8 efficiency data");
        t.efficiency = matmul_efficiency(
            op.mxfp8 && profile.matmul_mxfp8 ? *profile.matmul_mxfp8 : *profile.matmul_fp8, op);
        peak_flops = gpu.peak_fp8_flops;
      } else {
        t.efficiency =
            matmul_efficiency(op.kind == OpKind::matmul ? profile.matmul : profile.batched_matmul, op);
      }
      break;
    case OpKind::attention:
      t.efficiency = attention_efficiency(
          op.pass == OpPass::forward ? profile.flash_forward : profile.flash_backward, op);
      break;
    case OpKind::elementwise:
      break;
  }
  if (op.flops > 0 && t.efficiency > 0)
    t.compute_s = op.flops / (peak_flops * t.efficiency);
  t.memory_s = memory_time(op.bytes, op.kernels, gpu, profile);
  t.duration_s = std::max(t.compute_s, t.memory_s);
  return t;
}

PerOpCostModel::PerOpCostModel(ModelSpec model, ParallelPlan plan, Options options)
    : model_(std::move(model)),
      plan_(plan),
      setup_(layer_setup(model_, plan_.micro_batch_size, plan_.tp, options.sequence_parallel, plan_.ep,
                         plan_.pytorch(), plan_.moe_dispatcher, plan_.expert_tp())),
      flops_(model_, plan_),
      layer_ops_(with_precision(layer_ops(model_, setup_), plan_)),
      moe_layer_ops_(model_.is_moe() ? with_precision(moe_layer_ops(model_, setup_), plan_)
                                     : std::vector<TransformerOp>{}),
      embedding_ops_(embedding_ops(model_, setup_)),
      logits_ops_(logits_ops(model_, setup_)),
      mtp_ops_(model_.mtp_depth > 0 ? with_precision(mtp_ops(model_, setup_), plan_)
                                    : std::vector<TransformerOp>{}),
      recompute_ops_(plan_.recompute == Recompute::selective_op
                         ? op_selective_recompute_ops(layer_ops_, model_, setup_, plan_)
                         : std::vector<TransformerOp>{}) {}

const PerOpCostModel::PartTimes& PerOpCostModel::times(const platforms::GpuSpec& gpu) const {
  const CacheKey key{gpu.name, gpu.efficiency_profile.get()};
  if (auto it = cache_.find(key); it != cache_.end())
    return it->second;
  const auto& profile = platforms::efficiency_profile_of(gpu);
  auto pass = [&](const std::vector<TransformerOp>& ops,
                  const std::function<bool(const TransformerOp&)>& in) {
    return pass_time(ops, in, gpu, profile);
  };
  const auto forward = [](const TransformerOp& op) { return is(op, OpPass::forward); };
  const auto input = [](const TransformerOp& op) { return is(op, OpPass::backward_input); };
  const auto weight = [](const TransformerOp& op) { return is(op, OpPass::backward_weight); };

  auto layer = [&](const std::vector<TransformerOp>& ops) { return pass_times(ops, gpu); };

  // The linear GEMMs of each pass; a pass that the host bounds keeps them
  // within its time.
  auto linear = [&](const std::vector<TransformerOp>& ops, const LayerPassTimes& whole) {
    LayerPassTimes l;
    if (ops.empty())
      return l;
    l.forward_s = std::min(whole.forward_s, linear_time_of(ops, OpPass::forward, gpu, profile));
    if (plan_.recompute == Recompute::full)
      l.recompute_s = l.forward_s;
    else if (plan_.recompute == Recompute::selective_op)
      l.recompute_s =
          std::min(whole.recompute_s, linear_time_of(recompute_ops_, OpPass::forward, gpu, profile));
    l.backward_input_s =
        std::min(whole.backward_input_s, linear_time_of(ops, OpPass::backward_input, gpu, profile));
    l.backward_weight_s =
        std::min(whole.backward_weight_s, linear_time_of(ops, OpPass::backward_weight, gpu, profile));
    return l;
  };

  PartTimes p;
  double kernels_s = 0, memory_bound_s = 0;
  for (const auto& op : layer_ops_) {
    const OpTiming t = time_op(op, gpu, profile);
    kernels_s += t.duration_s;
    if (t.memory_s >= t.compute_s)
      memory_bound_s += t.duration_s;
  }
  p.layer_memory_bound_fraction = kernels_s > 0 ? memory_bound_s / kernels_s : 0;
  p.layer = layer(layer_ops_);
  p.moe_layer = layer(moe_layer_ops_);
  p.layer_linear = linear(layer_ops_, p.layer);
  p.moe_layer_linear = linear(moe_layer_ops_, p.moe_layer);
  p.embedding_forward_s = pass(embedding_ops_, forward);
  p.embedding_weight_s = pass(embedding_ops_, weight);
  p.logits_forward_s = pass(logits_ops_, forward);
  p.logits_input_s = pass(logits_ops_, input);
  p.logits_weight_s = pass(logits_ops_, weight);
  if (model_.mtp_depth > 0) {
    // Each module: its own kernels, a layer (a MoE one when the model's
    // last layer is) and the shared output head with its loss.
    const bool moe = model_.mtp_layers_are_moe();
    const LayerPassTimes& l = moe ? p.moe_layer : p.layer;
    const LayerPassTimes& linear_l = moe ? p.moe_layer_linear : p.layer_linear;
    const double depth = model_.mtp_depth;
    p.mtp.forward_s = depth * (pass(mtp_ops_, forward) + l.forward_s + p.logits_forward_s);
    p.mtp.recompute_s = depth * l.recompute_s;
    p.mtp.backward_input_s = depth * (pass(mtp_ops_, input) + l.backward_input_s + p.logits_input_s);
    p.mtp.backward_weight_s = depth * (pass(mtp_ops_, weight) + l.backward_weight_s + p.logits_weight_s);
    p.mtp_linear.forward_s =
        depth * (linear_time_of(mtp_ops_, OpPass::forward, gpu, profile) + linear_l.forward_s);
    p.mtp_linear.recompute_s = depth * linear_l.recompute_s;
    p.mtp_linear.backward_input_s =
        depth * (linear_time_of(mtp_ops_, OpPass::backward_input, gpu, profile) + linear_l.backward_input_s);
    p.mtp_linear.backward_weight_s =
        depth *
        (linear_time_of(mtp_ops_, OpPass::backward_weight, gpu, profile) + linear_l.backward_weight_s);
  }
  return cache_.emplace(key, p).first->second;
}

LayerPassTimes PerOpCostModel::pass_times(const std::vector<TransformerOp>& ops,
                                          const platforms::GpuSpec& gpu) const {
  LayerPassTimes l;
  if (ops.empty())
    return l;
  const auto& profile = platforms::efficiency_profile_of(gpu);
  auto pass = [&](const std::function<bool(const TransformerOp&)>& in) {
    return pass_time(ops, in, gpu, profile);
  };
  l.forward_s = pass([](const TransformerOp& op) { return is(op, OpPass::forward); });
  switch (plan_.recompute) {
    case Recompute::none:
      break;
    case Recompute::selective:  // the chosen modules' forward ops (recompute_modules.hpp): core_attn by
                                // default
      l.recompute_s = pass([this](const TransformerOp& op) { return selectively_recomputed(op, plan_); });
      break;
    case Recompute::full:
      l.recompute_s = l.forward_s;
      break;
    case Recompute::selective_op:  // a dense layer (op_selective_recompute.hpp); MoE plans are refused
      l.recompute_s = pass_time(
          recompute_ops_, [](const TransformerOp&) { return true; }, gpu, profile);
      break;
  }
  l.backward_input_s = pass([](const TransformerOp& op) { return is(op, OpPass::backward_input); });
  l.backward_weight_s = pass([](const TransformerOp& op) { return is(op, OpPass::backward_weight); });
  return l;
}

double PerOpCostModel::moe_load_extra_s(PipeOpKind kind, double load, const platforms::GpuSpec& gpu) const {
  if (!model_.is_moe() || load == 1)
    return 0;
  const LayerPassTimes& balanced = times(gpu).moe_layer;
  const LoadedCacheKey key{{gpu.name, gpu.efficiency_profile.get()}, load};
  auto it = loaded_cache_.find(key);
  if (it == loaded_cache_.end()) {
    LayerSetup setup = setup_;
    setup.expert_load = load;
    it = loaded_cache_.emplace(key, pass_times(with_precision(moe_layer_ops(model_, setup), plan_), gpu))
             .first;
  }
  const LayerPassTimes& loaded = it->second;
  const double f = loaded.forward_s - balanced.forward_s;
  const double r = loaded.recompute_s - balanced.recompute_s;
  const double b = loaded.backward_input_s - balanced.backward_input_s;
  const double w = loaded.backward_weight_s - balanced.backward_weight_s;
  switch (kind) {
    case PipeOpKind::forward:
      return f;
    case PipeOpKind::backward:
      return r + b + w;
    case PipeOpKind::backward_input:
      return r + b;
    case PipeOpKind::backward_weight:
      return w;
  }
  return 0;
}

std::vector<AsyncTpUnit> PerOpCostModel::async_tp_units(PipeOpKind kind,
                                                        const platforms::GpuSpec& gpu) const {
  std::vector<AsyncTpUnit> units;
  if (plan_.tp < 2 || kind == PipeOpKind::backward_weight)
    return units;
  const auto& profile = platforms::efficiency_profile_of(gpu);
  auto add = [&](OpPass pass) {
    for (const auto& op : layer_ops_) {
      if (op.pass != pass)
        continue;
      const auto collective = async_tp_collective_of(op);
      if (!collective)
        continue;
      units.push_back({.collective = *collective,
                       .gemm_s = time_op(op, gpu, profile).duration_s,
                       .shard_gemm_s = time_op(async_tp_shard(op, plan_.tp), gpu, profile).duration_s,
                       .exposed_s = memory_kernel_s(async_tp_exposed_bytes(op, *collective, plan_.tp), gpu)});
    }
  };
  if (kind == PipeOpKind::forward || plan_.recompute == Recompute::full)
    add(OpPass::forward);
  if (kind != PipeOpKind::forward)
    add(OpPass::backward_input);
  return units;
}

LayerPassTimes PerOpCostModel::layer_times(const platforms::GpuSpec& gpu) const {
  return times(gpu).layer;
}

LayerPassTimes PerOpCostModel::moe_layer_times(const platforms::GpuSpec& gpu) const {
  return times(gpu).moe_layer;
}

namespace {
std::vector<std::pair<TransformerOp, OpTiming>> timed(const std::vector<TransformerOp>& ops,
                                                      const platforms::GpuSpec& gpu) {
  const auto& profile = platforms::efficiency_profile_of(gpu);
  std::vector<std::pair<TransformerOp, OpTiming>> out;
  for (const auto& op : ops)
    out.emplace_back(op, time_op(op, gpu, profile));
  return out;
}
}  // namespace

std::vector<std::pair<TransformerOp, OpTiming>> PerOpCostModel::timed_layer_ops(
    const platforms::GpuSpec& gpu) const {
  return timed(layer_ops_, gpu);
}

std::vector<std::pair<TransformerOp, OpTiming>> PerOpCostModel::timed_moe_layer_ops(
    const platforms::GpuSpec& gpu) const {
  return timed(moe_layer_ops_, gpu);
}

double PerOpCostModel::layers_time(const StageSlice& slice, double LayerPassTimes::*pass,
                                   const LayerPassTimes& dense, const LayerPassTimes& moe) const {
  const int moe_layers = model_.moe_layers_in(slice.first_layer, slice.layers);
  return (slice.layers - moe_layers) * (dense.*pass) + moe_layers * (moe.*pass);
}

OpCost PerOpCostModel::forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const auto& t = times(gpu);
  OpCost cost = flops_.forward(slice, gpu);
  cost.duration_s = layers_time(slice, &LayerPassTimes::forward_s, t) +
                    (slice.embedding ? t.embedding_forward_s : 0.0) +
                    (slice.logits ? t.logits_forward_s : 0.0);
  cost.memory_bound_fraction = t.layer_memory_bound_fraction;
  cost.tp_overlap_s = linear_time(slice, &LayerPassTimes::forward_s, t);
  if (slice.logits && model_.mtp_depth > 0) {
    cost.duration_s += t.mtp.forward_s;
    cost.tp_overlap_s += t.mtp_linear.forward_s;
  }
  return cost;
}

OpCost PerOpCostModel::backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const auto& t = times(gpu);
  OpCost cost = flops_.backward_input(slice, gpu);
  cost.duration_s = layers_time(slice, &LayerPassTimes::recompute_s, t) +
                    layers_time(slice, &LayerPassTimes::backward_input_s, t) +
                    (slice.logits ? t.logits_input_s : 0.0);
  cost.memory_bound_fraction = t.layer_memory_bound_fraction;
  cost.tp_overlap_s = linear_time(slice, &LayerPassTimes::recompute_s, t) +
                      linear_time(slice, &LayerPassTimes::backward_input_s, t);
  if (slice.logits && model_.mtp_depth > 0) {
    cost.duration_s += t.mtp.recompute_s + t.mtp.backward_input_s;
    cost.tp_overlap_s += t.mtp_linear.recompute_s + t.mtp_linear.backward_input_s;
  }
  return cost;
}

OpCost PerOpCostModel::backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  const auto& t = times(gpu);
  OpCost cost = flops_.backward_weight(slice, gpu);
  cost.duration_s = layers_time(slice, &LayerPassTimes::backward_weight_s, t) +
                    (slice.embedding ? t.embedding_weight_s : 0.0) + (slice.logits ? t.logits_weight_s : 0.0);
  cost.memory_bound_fraction = t.layer_memory_bound_fraction;
  cost.tp_overlap_s = linear_time(slice, &LayerPassTimes::backward_weight_s, t);
  if (slice.logits && model_.mtp_depth > 0) {
    cost.duration_s += t.mtp.backward_weight_s;
    cost.tp_overlap_s += t.mtp_linear.backward_weight_s;
  }
  return cost;
}

OpCost PerOpCostModel::backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const {
  OpCost cost = flops_.backward(slice, gpu);
  const OpCost input = backward_input(slice, gpu), weight = backward_weight(slice, gpu);
  cost.duration_s = input.duration_s + weight.duration_s;
  cost.memory_bound_fraction = times(gpu).layer_memory_bound_fraction;
  cost.tp_overlap_s = input.tp_overlap_s + weight.tp_overlap_s;
  return cost;
}

OpCost PerOpCostModel::optimizer(double parameters, const platforms::GpuSpec& gpu) const {
  const auto& profile = platforms::efficiency_profile_of(gpu);
  // FP8: the weights' casts for the next step (precision.hpp), charged on
  // every parameter the step updates: also on the embedding and output
  // layer, which stay BF16 (the optimizer is told a count, not its kinds; an
  // over-count of up to 4 of the 52 bytes on their share, 6.5% of Llama 3.1
  // 8B's parameters).
  const double bytes =
      parameters * (kOptimizerBytesPerParameter + fp8_weight_cast_bytes_per_parameter(plan_));
  const double device_s = memory_time(bytes, kOptimizerKernels, gpu, profile);
  return {std::max(device_s, kOptimizerKernels * profile.host_overhead_per_kernel_s), 0, 0, 1.0};
}

double PerOpCostModel::memory_kernel_s(double bytes, const platforms::GpuSpec& gpu) const {
  const auto& profile = platforms::efficiency_profile_of(gpu);
  return std::max(memory_time(bytes, 1, gpu, profile), profile.host_overhead_per_kernel_s);
}

}  // namespace trainsim::workloads
