#include "analysis/mfu_definitions.hpp"

namespace trainsim::analysis {

namespace {

bool has_shape(const workloads::ModelSpec& m) {
  return m.layers > 0 && m.hidden > 0 && m.heads > 0 && m.seq_len > 0;
}

// Attention of one token, forward and backward, counted in full: the score
// (Q K^T) and context (A V) products are 2 s h FLOPs each forward, three
// times that with the backward. PaLM's 12 L H Q T with H Q = h.
double full_attention_flops_per_token(const workloads::ModelSpec& m) {
  return 12.0 * m.layers * m.seq_len * double(m.hidden);
}

// NeMo's llama2 / llama3 / mixtral formulas, per token and layer:
// 12 h^2 (1 + g / a) for Q, K, V and the output projection, 18 f h for a
// gated MLP (12 f h ungated: nemotron's; gpt3's 24 h^2 is both with f = 4h),
// top_k of them in a MoE layer and no router GEMM.
double nvidia_layer_flops_per_token(const workloads::ModelSpec& m, int layer) {
  const double h = m.hidden;
  const double kv = h * m.kv_heads / m.heads;
  const double matrices = m.swiglu ? 3.0 : 2.0;
  const double mlp = m.is_moe_layer(layer)
                         ? (m.moe.top_k + m.moe.shared_experts) * matrices * h * m.moe.expert_ffn_hidden
                         : matrices * h * m.ffn_hidden;
  return 6.0 * (2 * h * h + 2 * h * kv + mlp);
}

}  // namespace

const std::vector<MfuDefinitionInfo>& mfu_definitions() {
  static const std::vector<MfuDefinitionInfo> all{
      {MfuDefinition::six_n, "mfu_6n", "6N",
       "6 N per token, N every parameter with the embeddings (Hoffmann et al. 2022, C = 6 N D), no attention "
       "term"},
      {MfuDefinition::palm, "mfu_palm", "PaLM",
       "6 N + 12 L H Q T per token, N without the input embedding (Chowdhery et al. 2022, appendix B)"},
      {MfuDefinition::nvidia, "mfu_nvidia", "NVIDIA",
       "NVIDIA DGX Cloud / NeMo model FLOPs: attention and MLP matmuls, full causal attention, output layer "
       "(NeMo nemo/utils/flops_formulas.py before 2025-08-09)"},
  };
  return all;
}

double model_flops_per_token(const workloads::ModelSpec& m, MfuDefinition definition) {
  if (!has_shape(m))
    return 0;
  switch (definition) {
    case MfuDefinition::six_n:
      return 6.0 * m.active_parameter_count();
    case MfuDefinition::palm:
      return 6.0 * (m.active_parameter_count() - m.embedding_parameters()) +
             full_attention_flops_per_token(m);
    case MfuDefinition::nvidia: {
      double flops = 6.0 * double(m.hidden) * m.vocab + full_attention_flops_per_token(m);
      for (int l = 0; l < m.layers; ++l)
        flops += nvidia_layer_flops_per_token(m, l);
      return flops;
    }
  }
  return 0;
}

}  // namespace trainsim::analysis
