#include "workloads/activation_memory.hpp"

#include <algorithm>

#include "workloads/mla_attention.hpp"
#include "workloads/op_selective_recompute.hpp"
#include "workloads/precision.hpp"
#include "workloads/recompute_modules.hpp"

namespace trainsim::workloads {
namespace {

struct Shape {
  double sbh = 0;       // tokens of one micro-batch on this GPU (s / cp) x b x h
  double s = 0;         // the whole sequence (attention scores span it)
  double h = 0;         // hidden
  double a = 0;         // heads
  double t = 1;         // TP degree
  double split = 0;     // per token, in units of h: the tensors TP splits (24 for GPT)
  double unsplit = 10;  // per token, in units of h: what TP does not split (10; more in a MoE layer)
  double v = 0;         // vocabulary
  bool sp = false;
  bool flash = false;
};

// The attention part of a layer's stored tensors when its heads are not
// hidden / heads wide (head_dim), with qk_norm, or under MLA, per token in
// units of h: `split` what TP splits by heads, `output` the attention output
// (the output projection's input, FP8 under FP8), `unsplit` what TP does
// not split (MLA's latents: the down projections are duplicated).
//   MHA  split 2 (a d) Q + 2 (kv d) K + 2 (kv d) V + 2 (a d) output, with
//        qk_norm the norms' inputs 2 (a d) + 2 (kv d) as well
//   MLA  split 2 n d_qk Q + 2 n d_qk K + 2 n d_v V + 2 n d_v output;
//        unsplit the latent norms' inputs 2 (r_q + r_kv), the up
//        projections' inputs (2 or FP8) (r_q + r_kv), the rotary key 2 d_rope
struct AttentionTerms {
  bool general = false;  // false: the GPT / Llama formula above holds
  double split = 0, output = 0, unsplit = 0;
};

AttentionTerms attention_terms(const ModelSpec& model, double fp8_saving) {
  AttentionTerms t;
  const double h = model.hidden;
  if (h <= 0)
    return t;
  if (model.is_mla()) {
    const MlaStoredElements e = mla_stored_elements(model);
    t.general = true;
    t.split = 2 * (e.per_head_query_key + e.per_head_value + e.attention_output) / h;
    t.output = e.attention_output / h;
    t.unsplit = (2 * e.latent_norm_inputs + (2 - fp8_saving) * e.up_projection_inputs + 2 * e.rope_key) / h;
    return t;
  }
  if (model.head_dim == 0 && !model.qk_norm)
    return t;
  const double d = model.attention_head_dim();
  const double q = model.heads * d, kv = model.kv_heads * d;
  t.general = true;
  t.split = (4 * q + 4 * kv + (model.qk_norm ? 2 * q + 2 * kv : 0.0)) / h;
  t.output = q / h;
  return t;
}

// routed_load: the GPU's load factor in a MoE layer (1 balanced), which
// scales the routed copies its experts receive.
Shape shape_of(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer = false,
               double routed_load = 1) {
  Shape x;
  x.s = model.seq_len;
  x.h = model.hidden;
  x.a = model.heads;
  x.t = plan.tp;
  x.v = model.vocab;
  x.sp = plan.sequence_parallel && plan.tp > 1;
  x.flash = model.flash_attention;
  const double local_tokens = static_cast<double>(model.seq_len) / plan.cp * plan.micro_batch_size;
  x.sbh = local_tokens * model.hidden;
  const double kv = model.heads > 0 ? static_cast<double>(model.kv_heads) / model.heads : 1.0;
  const double f = model.hidden > 0 ? static_cast<double>(model.ffn_hidden) / model.hidden : 4.0;
  // FP8 (workloads/precision.hpp) keeps the linear GEMMs' inputs as FP8:
  // `fp8_saving` bytes less per element of each (0 for BF16).
  const double fp8_saving = 2 - saved_linear_input_bytes(plan);
  // Q and the attention output (2 + 2), K and V (4 kv), the MLP
  // intermediates (4 f GeLU, 6 f SwiGLU); under FP8 the attention output
  // (the projection's input) and the second MLP GEMM's input (f) are FP8.
  x.split = 4 + 4 * kv + (model.swiglu ? 6 : 4) * f - fp8_saving * (1 + f);
  // The QKV and first MLP GEMM inputs (the norms' outputs), FP8 too.
  x.unsplit -= 2 * fp8_saving;
  // Attention that is not plain d = h / heads multi-head attention: its own
  // stored tensors, per token in units of h (attention_terms).
  const AttentionTerms att = attention_terms(model, fp8_saving);
  if (att.general)
    x.split = att.split + (model.swiglu ? 6 : 4) * f - fp8_saving * (att.output + f);
  x.unsplit += att.unsplit;
  // The routed copies a GPU keeps: all its TP group's tokens' (expert_tp =
  // tp), or with expert_tp below tp (parallel folding) expert_tp / tp of
  // them (each GPU dispatches its own sequence-parallel share).
  const double routed_share = plan.expert_tp_folded() ? double(plan.expert_tp()) / plan.tp : 1.0;
  if (moe_layer && model.hidden > 0 && att.general) {
    const auto& m = model.moe;
    const double copies = m.top_k * m.capacity_factor * routed_load;
    const double fe = static_cast<double>(m.expert_ffn_hidden) / model.hidden;
    x.split = att.split - fp8_saving * att.output +
              ((model.swiglu ? 6 : 4) - fp8_saving) * fe * (copies + m.shared_experts);
    x.unsplit += (4 - fp8_saving) * copies * routed_share;
  } else if (moe_layer && model.hidden > 0) {
    // A MoE layer's MLP intermediates are those of its top_k (x capacity)
    // routed copies of every token plus its shared experts, at
    // expert_ffn_hidden; and it keeps the permuted expert inputs and the
    // expert outputs that unpermute weights (2 + 2 per copy), which TP does
    // not split (each TP rank runs every local expert on all its tokens).
    const auto& m = model.moe;
    const double copies = m.top_k * m.capacity_factor * routed_load;
    const double fe = static_cast<double>(m.expert_ffn_hidden) / model.hidden;
    x.split =
        4 + 4 * kv - fp8_saving + ((model.swiglu ? 6 : 4) - fp8_saving) * fe * (copies + m.shared_experts);
    x.unsplit += (4 - fp8_saving) * copies * routed_share;  // the permuted inputs feed the experts' GEMMs
  }
  return x;
}

// Softmax output, dropout mask and dropout output of the scores: 5 a s^2 b,
// i.e. s b h x 5 a s / h, split by TP over heads.
double scores(const Shape& x) {
  return x.flash ? 0.0 : x.sbh * 5 * x.a * x.s / (x.h * x.t);
}

// What Megatron's recompute modules other than core_attn leave unstored in
// one layer (recompute_modules.hpp), bytes: MLA's Q, K, V (mla_up_proj), the
// routed experts' activation output, the down projection's input, FP8 under
// FP8 (moe_act), a dense layer's MLP intermediates (mlp). All TP-split.
double module_saving(const Shape& x, const ModelSpec& model, const ParallelPlan& plan, bool moe_layer,
                     double routed_load = 1) {
  if (x.h <= 0 || x.t <= 0)
    return 0;
  const double fp8_saving = 2 - saved_linear_input_bytes(plan);
  double split = 0;  // per token, in units of h
  if (recomputes_module(plan, RecomputeModule::mla_up_proj) && model.is_mla()) {
    const MlaStoredElements e = mla_stored_elements(model);
    split += 2 * (e.per_head_query_key + e.per_head_value) / x.h;
  }
  if (recomputes_module(plan, RecomputeModule::moe_act) && moe_layer)
    split += (2 - fp8_saving) * model.moe.top_k * model.moe.capacity_factor * routed_load *
             model.moe.expert_ffn_hidden / x.h;
  if (recomputes_module(plan, RecomputeModule::mlp) && !moe_layer)
    split += ((model.swiglu ? 6 : 4) - fp8_saving) * model.ffn_hidden / x.h;
  return x.sbh * split / x.t;
}

}  // namespace

double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, Recompute recompute,
                              bool moe_layer, double routed_load) {
  const Shape x = shape_of(model, plan, moe_layer, routed_load);
  if (x.h <= 0 || x.t <= 0)
    return 0;
  const double kept = x.sp ? (x.unsplit + x.split) / x.t : x.unsplit + x.split / x.t;
  switch (recompute) {
    case Recompute::none:
      return x.sbh * kept + scores(x);
    case Recompute::selective:
      if (plan.recompute_modules.empty())  // core_attn
        return x.sbh * kept;
      return x.sbh * kept + (recomputes_module(plan, RecomputeModule::core_attn) ? 0.0 : scores(x)) -
             module_saving(x, model, plan, moe_layer, routed_load);
    case Recompute::full:
      return 2 * x.sbh / (x.sp ? x.t : 1.0);
    case Recompute::selective_op:  // dense layers only (op_selective_recompute.hpp)
      return op_selective_layer_activation_bytes(model, plan);
  }
  return 0;
}

double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, Recompute recompute) {
  return layer_activation_bytes(model, plan, recompute, false);
}

double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return layer_activation_bytes(model, plan, plan.recompute);
}

double stage_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, int layers, int first_layer) {
  const int moe = model.moe_layers_in(first_layer, layers);
  return (layers - moe) * layer_activation_bytes(model, plan) +
         (moe > 0 ? moe * layer_activation_bytes(model, plan, plan.recompute, true) : 0.0);
}

double embedding_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  return x.sbh / (x.sp ? x.t : 1.0);
}

double logits_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  if (x.h <= 0)
    return 0;
  return 4 * x.sbh / (x.sp ? x.t : 1.0) + 4 * x.sbh * x.v / (x.h * x.t);
}

double layer_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer,
                                        double routed_load) {
  const Shape x = shape_of(model, plan, moe_layer, routed_load);
  if (x.h <= 0 || x.t <= 0)
    return 0;
  // Replicated without SP: the QKV and first MLP matmul inputs and the
  // gradients of the two row-parallel outputs (2 s b h each); split: the
  // same tensors as the stored activations' split part.
  const double replicated = 8 + (x.unsplit - 10);
  return x.sbh * (x.sp ? (replicated + x.split) / x.t : replicated + x.split / x.t);
}

double layer_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return layer_weight_gradient_hold_bytes(model, plan, false);
}

double logits_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  if (x.h <= 0)
    return 0;
  return 2 * x.sbh / (x.sp ? x.t : 1.0) + 2 * x.sbh * x.v / (x.h * x.t);
}

double mtp_activation_bytes(const ModelSpec& model, const ParallelPlan& plan,
                            const std::vector<double>& routed_loads) {
  if (model.mtp_depth <= 0)
    return 0;
  const Shape x = shape_of(model, plan);
  const double fp8_saving = 2 - saved_linear_input_bytes(plan);
  const double own = x.sbh * (2 + 2 + (4 - 2 * fp8_saving)) / (x.sp ? x.t : 1.0);
  const bool moe = model.mtp_layers_are_moe();
  if (!moe || routed_loads.empty()) {
    const double layer = layer_activation_bytes(model, plan, plan.recompute, moe);
    return model.mtp_depth * (own + layer + logits_activation_bytes(model, plan));
  }
  double bytes = 0;
  for (int k = 0; k < model.mtp_depth; ++k)
    bytes +=
        own +
        layer_activation_bytes(model, plan, plan.recompute, true, routed_loads[static_cast<std::size_t>(k)]) +
        logits_activation_bytes(model, plan);
  return bytes;
}

double mtp_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan,
                                      const std::vector<double>& routed_loads) {
  if (model.mtp_depth <= 0)
    return 0;
  const Shape x = shape_of(model, plan);
  const double fp8_saving = 2 - saved_linear_input_bytes(plan);
  const double projection_input = x.sbh * (4 - 2 * fp8_saving) / (x.sp ? x.t : 1.0);
  if (model.mtp_layers_are_moe() && !routed_loads.empty()) {
    double bytes = 0;
    for (int k = 0; k < model.mtp_depth; ++k)
      bytes +=
          projection_input +
          layer_weight_gradient_hold_bytes(model, plan, true, routed_loads[static_cast<std::size_t>(k)]) +
          logits_weight_gradient_hold_bytes(model, plan);
    return bytes;
  }
  return model.mtp_depth *
         (projection_input + layer_weight_gradient_hold_bytes(model, plan, model.mtp_layers_are_moe()) +
          logits_weight_gradient_hold_bytes(model, plan));
}

double recompute_workspace_bytes(const ModelSpec& model, const ParallelPlan& plan, double routed_load) {
  switch (plan.recompute) {
    case Recompute::none:
      return 0;
    case Recompute::selective:
      if (plan.recompute_modules.empty())
        return scores(shape_of(model, plan));
      // One layer's recomputed tensors at a time: the larger kind of layer.
      return (recomputes_module(plan, RecomputeModule::core_attn) ? scores(shape_of(model, plan)) : 0.0) +
             std::max(module_saving(shape_of(model, plan), model, plan, false),
                      model.is_moe() ? module_saving(shape_of(model, plan, true, routed_load), model, plan,
                                                     true, routed_load)
                                     : 0.0);
    case Recompute::full:
      // One layer rebuilt at a time: the largest kind of layer.
      return std::max(
          layer_activation_bytes(model, plan, Recompute::none),
          model.is_moe() ? layer_activation_bytes(model, plan, Recompute::none, true, routed_load) : 0.0);
    case Recompute::selective_op:
      // One layer's recomputed tensors at a time: what it would keep
      // without recomputation less what the policy stored.
      return std::max(0.0, layer_activation_bytes(model, plan, Recompute::none) -
                               op_selective_layer_activation_bytes(model, plan));
  }
  return 0;
}

}  // namespace trainsim::workloads
