#include "workloads/mla_attention.hpp"

namespace trainsim::workloads {
namespace {

// The weights of the GEMMs (mla_attention.hpp's table).
double query_weights(const ModelSpec& m) {
  const double h = m.hidden, n = m.heads;
  const auto& a = m.mla;
  if (a.q_lora_rank == 0)
    return h * n * a.qk_head_dim();                                        // q_proj
  return h * a.q_lora_rank + double(a.q_lora_rank) * n * a.qk_head_dim();  // q_down, q_up
}

double key_value_weights(const ModelSpec& m) {
  const double h = m.hidden, n = m.heads;
  const auto& a = m.mla;
  return h * (a.kv_lora_rank + a.qk_rope_head_dim) +                        // kv_down
         double(a.kv_lora_rank) * n * (a.qk_nope_head_dim + a.v_head_dim);  // kv_up
}

double output_weights(const ModelSpec& m) {
  return double(m.heads) * m.mla.v_head_dim * m.hidden;
}

}  // namespace

double mla_matmul_parameters(const ModelSpec& m) {
  return query_weights(m) + key_value_weights(m) + output_weights(m);
}

double mla_parameters(const ModelSpec& m) {
  // The RMSNorms of the compressed query and key/value (no biases anywhere).
  return mla_matmul_parameters(m) + m.mla.q_lora_rank + m.mla.kv_lora_rank;
}

double mla_core_forward_flops(const ModelSpec& m, double micro_batch) {
  const double s = m.seq_len;
  // Scores: [s, d_qk] x [d_qk, s] per head; context: [s, s] x [s, d_v].
  return 2 * micro_batch * s * s * m.heads * (m.mla.qk_head_dim() + m.mla.v_head_dim);
}

double mla_key_value_elements(const ModelSpec& m) {
  return double(m.heads) * (m.mla.qk_head_dim() + m.mla.v_head_dim);
}

MlaStoredElements mla_stored_elements(const ModelSpec& m) {
  const auto& a = m.mla;
  const double n = m.heads;
  MlaStoredElements e;
  e.per_head_query_key = 2 * n * a.qk_head_dim();  // Q and K (k_pe broadcast to every head)
  e.per_head_value = n * a.v_head_dim;
  e.attention_output = n * a.v_head_dim;  // the output projection's input
  // With query compression, its norm's input and the up projection's input
  // (without it, q_proj reads the layer's norm output, stored anyway).
  e.latent_norm_inputs = double(a.q_lora_rank) + a.kv_lora_rank;
  e.up_projection_inputs = double(a.q_lora_rank) + a.kv_lora_rank;
  e.rope_key = a.qk_rope_head_dim;
  return e;
}

}  // namespace trainsim::workloads
