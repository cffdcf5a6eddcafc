#include "workloads/model_spec.hpp"

namespace trainsim::workloads {

double ModelSpec::layer_parameters() const {
  const double h = hidden, f = ffn_hidden;
  const double kv = h * kv_heads / heads;
  // Q and O are h x h, K and V h x kv; biases only in GPT-style layers.
  const double attention = 2 * h * h + 2 * h * kv + (swiglu ? 0 : 2 * h + 2 * kv);
  const double mlp = swiglu ? 3 * h * f : 2 * h * f + f + h;
  const double norms = swiglu ? 2 * h : 4 * h;  // RMSNorm has no bias
  return attention + mlp + norms;
}

double ModelSpec::embedding_parameters() const {
  return double(vocab) * hidden + (learned_positions ? double(seq_len) * hidden : 0.0);
}

double ModelSpec::logits_parameters() const {
  return tied_embeddings ? 0.0 : double(vocab) * hidden;
}

double ModelSpec::parameter_count() const {
  // The final norm adds 2h (GPT) or h (Llama).
  return layers * layer_parameters() + embedding_parameters() + logits_parameters() +
         (swiglu ? hidden : 2.0 * hidden);
}

double ModelSpec::layer_forward_flops(double micro_batch) const {
  const double h = hidden, s = seq_len, f = ffn_hidden;
  const double kv = h * kv_heads / heads;
  const double tokens = micro_batch * s;
  const double matmul_params = 2 * h * h + 2 * h * kv + (swiglu ? 3.0 : 2.0) * h * f;
  return 2 * tokens * matmul_params + attention_core_forward_flops(micro_batch);
}

double ModelSpec::attention_core_forward_flops(double micro_batch) const {
  const double h = hidden, s = seq_len;
  return 4 * micro_batch * s * s * h;
}

double ModelSpec::logits_forward_flops(double micro_batch) const {
  return 2.0 * micro_batch * seq_len * hidden * vocab;
}

double ModelSpec::iteration_model_flops(double global_batch) const {
  return 3 * (layers * layer_forward_flops(global_batch) + logits_forward_flops(global_batch));
}

}  // namespace trainsim::workloads
