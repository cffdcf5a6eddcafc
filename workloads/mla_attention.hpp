#pragma once
// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, Section 2.1;
// DeepSeek-V3, arXiv 2412.19437, Section 2.1.1): the formulas of one layer's
// MLA block, from the projections of DeepSeek-V3's inference/model.py
// (class MLA) and Megatron-core's transformer/multi_latent_attention.py
// (MLASelfAttention), which trains it. With n heads, d_nope + d_rope =
// d_qk, d_v, ranks r_q (0: no query compression) and r_kv, hidden h:
//
//   GEMM          weight                 Megatron module (TP)
//   q_down        h x r_q                linear_q_down_proj (duplicated)
//   q_up          r_q x n d_qk           linear_q_up_proj (column, q_layernorm fused)
//   q_proj        h x n d_qk             linear_q_proj when r_q = 0 (column)
//   kv_down       h x (r_kv + d_rope)    linear_kv_down_proj (duplicated)
//   kv_up         r_kv x n (d_nope+d_v)  linear_kv_up_proj (column, kv_layernorm fused)
//   proj          n d_v x h              linear_proj (row)
//
// plus the RMSNorm weights of the compressed query (r_q) and key/value
// (r_kv). The rotary part of the key (d_rope per token) is shared by every
// head. Forward FLOPs per token: 2 x the GEMM weights, and the attention
// core 2 s n (d_qk + d_v) per token (scores over d_qk, context over d_v; in
// full, as trainsim counts attention). The down projections are duplicated
// on every TP rank (Megatron's "duplicated" TELinear): with sequence
// parallelism each rank runs them on its own s / t tokens, without it on
// all s; their outputs, not the hidden state, are what the TP group
// gathers then. The kernels are in transformer_ops.cpp (mla_ops), the
// stored tensors in activation_memory.cpp.
#include "workloads/model_spec.hpp"

namespace trainsim::workloads {

double mla_parameters(const ModelSpec& model);
double mla_matmul_parameters(const ModelSpec& model);
double mla_core_forward_flops(const ModelSpec& model, double micro_batch);
// Keys (n x d_qk) and values (n x d_v) of one token after the up
// projection: what Megatron's ring attention exchanges.
double mla_key_value_elements(const ModelSpec& model);

// Per token, in elements, the tensors one MLA layer stores for its backward
// besides the layer input and the norm output every layer keeps
// (activation_memory.cpp adds the bytes per element):
struct MlaStoredElements {
  // Split over the TP group (per head): Q and K (n d_qk each), V and the
  // attention output (n d_v each).
  double per_head_query_key = 0, per_head_value = 0, attention_output = 0;
  // Of the compressed latents, per token, not split by TP (the down
  // projections are duplicated; sequence parallelism splits them): the
  // inputs of the two latent norms and of the two up projections, and the
  // rotary key part.
  double latent_norm_inputs = 0, up_projection_inputs = 0, rope_key = 0;
};
MlaStoredElements mla_stored_elements(const ModelSpec& model);

}  // namespace trainsim::workloads
