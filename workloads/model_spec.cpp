#include "workloads/model_spec.hpp"

#include <algorithm>

#include "workloads/attention.hpp"

namespace trainsim::workloads {

namespace {

// One MLP of inner size f: three matrices gated, two with biases otherwise.
double mlp_parameters(const ModelSpec& m, double f) {
  const double h = m.hidden;
  return m.swiglu ? 3 * h * f : 2 * h * f + f + h;
}

double mlp_matmul_parameters(const ModelSpec& m, double f) {
  return (m.swiglu ? 3.0 : 2.0) * m.hidden * f;
}

}  // namespace

bool ModelSpec::is_moe_layer(int layer) const {
  return is_moe() && layer >= moe.first_dense_layers &&
         layer % std::max(1, moe.layer_freq) == moe.layer_offset;
}

double ModelSpec::attention_head_dim() const {
  if (head_dim > 0)
    return head_dim;
  return heads > 0 ? double(hidden) / heads : 0.0;
}

int ModelSpec::moe_layers_in(int first, int count) const {
  int n = 0;
  for (int l = first; l < first + count; ++l)
    n += is_moe_layer(l) ? 1 : 0;
  return n;
}

double ModelSpec::layer_parameters() const {
  const double h = hidden;
  const double attention = traits_of(this->attention).parameters(*this);
  const double norms = swiglu ? 2 * h : 4 * h;  // RMSNorm has no bias
  return attention + mlp_parameters(*this, ffn_hidden) + norms;
}

double ModelSpec::layer_parameters(int layer) const {
  if (!is_moe_layer(layer))
    return layer_parameters();
  const double router = double(hidden) * moe.experts;
  return layer_parameters() - mlp_parameters(*this, ffn_hidden) + router +
         moe.shared_experts * mlp_parameters(*this, moe.expert_ffn_hidden) + expert_parameters(layer);
}

double ModelSpec::expert_parameters(int layer) const {
  return is_moe_layer(layer) ? moe.experts * mlp_parameters(*this, moe.expert_ffn_hidden) : 0.0;
}

double ModelSpec::active_layer_parameters(int layer) const {
  if (!is_moe_layer(layer))
    return layer_parameters();
  return layer_parameters(layer) - expert_parameters(layer) +
         moe.top_k * mlp_parameters(*this, moe.expert_ffn_hidden);
}

double ModelSpec::active_parameter_count() const {
  double p = embedding_parameters() + logits_parameters() + (swiglu ? hidden : 2.0 * hidden);
  for (int l = 0; l < layers; ++l)
    p += active_layer_parameters(l);
  return p;
}

double ModelSpec::embedding_parameters() const {
  return double(vocab) * hidden + (learned_positions ? double(seq_len) * hidden : 0.0);
}

double ModelSpec::logits_parameters() const {
  return tied_embeddings ? 0.0 : double(vocab) * hidden;
}

double ModelSpec::parameter_count() const {
  // The final norm adds 2h (GPT) or h (Llama).
  double p = embedding_parameters() + logits_parameters() + (swiglu ? hidden : 2.0 * hidden);
  for (int l = 0; l < layers; ++l)
    p += layer_parameters(l);
  return p;
}

double ModelSpec::layer_forward_flops(double micro_batch) const {
  const double h = hidden, s = seq_len, f = ffn_hidden;
  const double tokens = micro_batch * s;
  const double matmul_params = traits_of(attention).matmul_parameters(*this) + (swiglu ? 3.0 : 2.0) * h * f;
  return 2 * tokens * matmul_params + attention_core_forward_flops(micro_batch);
}

double ModelSpec::layer_forward_flops(double micro_batch, int layer) const {
  if (!is_moe_layer(layer))
    return layer_forward_flops(micro_batch);
  const double tokens = micro_batch * seq_len;
  const double moe_matmul_parameters =
      double(hidden) * moe.experts +
      (moe.top_k + moe.shared_experts) * mlp_matmul_parameters(*this, moe.expert_ffn_hidden);
  return layer_forward_flops(micro_batch) +
         2 * tokens * (moe_matmul_parameters - mlp_matmul_parameters(*this, ffn_hidden));
}

double ModelSpec::layers_forward_flops(double micro_batch, int first, int count) const {
  if (!is_moe())
    return count * layer_forward_flops(micro_batch);
  double flops = 0;
  for (int l = first; l < first + count; ++l)
    flops += layer_forward_flops(micro_batch, l);
  return flops;
}

double ModelSpec::attention_core_forward_flops(double micro_batch) const {
  return traits_of(attention).core_forward_flops(*this, micro_batch);
}

double ModelSpec::mtp_parameters() const {
  if (mtp_depth <= 0)
    return 0;
  const double h = hidden;
  const double norm = swiglu ? h : 2 * h;
  // The hidden-state and embedding norms, the 2h x h projection, the layer,
  // the module's final norm before the shared output head.
  return mtp_depth * (2 * norm + 2 * h * h + layer_parameters(layers - 1) + norm);
}

double ModelSpec::mtp_expert_parameters() const {
  return mtp_depth > 0 ? mtp_depth * expert_parameters(layers - 1) : 0.0;
}

double ModelSpec::mtp_forward_flops(double micro_batch) const {
  if (mtp_depth <= 0)
    return 0;
  const double tokens = micro_batch * seq_len;
  const double h = hidden;
  return mtp_depth * (2 * tokens * 2 * h * h + layer_forward_flops(micro_batch, layers - 1) +
                      logits_forward_flops(micro_batch));
}

double ModelSpec::mtp_attention_core_forward_flops(double micro_batch) const {
  return mtp_depth > 0 ? mtp_depth * attention_core_forward_flops(micro_batch) : 0.0;
}

double ModelSpec::logits_forward_flops(double micro_batch) const {
  return 2.0 * micro_batch * seq_len * hidden * vocab;
}

double ModelSpec::iteration_model_flops(double global_batch) const {
  if (mtp_depth > 0)
    return 3 * (layers_forward_flops(global_batch, 0, layers) + logits_forward_flops(global_batch) +
                mtp_forward_flops(global_batch));
  return 3 * (layers_forward_flops(global_batch, 0, layers) + logits_forward_flops(global_batch));
}

}  // namespace trainsim::workloads
