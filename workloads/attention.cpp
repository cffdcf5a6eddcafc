#include "workloads/attention.hpp"

#include <stdexcept>

#include "workloads/mla_attention.hpp"

namespace trainsim::workloads {
namespace {

// Multi-head attention (Vaswani et al.; grouped-query attention with
// kv_heads < heads, Ainslie et al. 2023): Q is h x heads d, K and V
// h x kv_heads d each, the output projection heads d x h; GPT-style layers
// add biases. With d = hidden / heads (no model.head_dim, no qk_norm) the
// expressions are the ones trainsim has always used, to the last bit.
bool default_shape(const ModelSpec& m) {
  return m.head_dim == 0 && !m.qk_norm;
}

double mha_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  if (default_shape(m)) {
    const double kv = h * m.kv_heads / m.heads;
    // Q and O are h x h, K and V h x kv; biases only in GPT-style layers.
    return 2 * h * h + 2 * h * kv + (m.swiglu ? 0 : 2 * h + 2 * kv);
  }
  const double d = m.attention_head_dim();
  const double q = m.heads * d, kv = m.kv_heads * d;
  // Qwen3's q_norm and k_norm: one head_dim weight each, shared by the heads.
  return 2 * h * q + 2 * h * kv + (m.swiglu ? 0 : q + 2 * kv + h) + (m.qk_norm ? 2 * d : 0.0);
}

double mha_matmul_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  if (default_shape(m)) {
    const double kv = h * m.kv_heads / m.heads;
    return 2 * h * h + 2 * h * kv;
  }
  const double d = m.attention_head_dim();
  return 2 * h * m.heads * d + 2 * h * m.kv_heads * d;
}

// Q K^T and A V: 2 b s^2 (heads d) FLOPs each.
double mha_core_forward_flops(const ModelSpec& m, double micro_batch) {
  const double s = m.seq_len;
  if (default_shape(m)) {
    const double h = m.hidden;
    return 4 * micro_batch * s * s * h;
  }
  return 4 * micro_batch * s * s * (m.heads * m.attention_head_dim());
}

double mha_key_value_elements(const ModelSpec& m) {
  if (m.head_dim == 0)
    return 2 * (double(m.hidden) * m.kv_heads / m.heads);
  return 2.0 * m.kv_heads * m.head_dim;
}

}  // namespace

const std::vector<AttentionTraits>& attention_table() {
  static const std::vector<AttentionTraits> table{
      {AttentionKind::mha, "mha",
       "multi-head attention: Q, K, V of heads / kv_heads x head_dim (grouped-query with kv_heads < heads)",
       mha_parameters, mha_matmul_parameters, mha_core_forward_flops, mha_key_value_elements},
      {AttentionKind::mla, "mla",
       "multi-head latent attention (DeepSeek-V2 / V3): low-rank query and joint key/value compression",
       mla_parameters, mla_matmul_parameters, mla_core_forward_flops, mla_key_value_elements},
  };
  return table;
}

const AttentionTraits& traits_of(AttentionKind kind) {
  for (const auto& t : attention_table())
    if (t.kind == kind)
      return t;
  throw std::logic_error("attention kind missing from attention_table()");
}

std::optional<AttentionKind> attention_kind_named(std::string_view word) {
  for (const auto& t : attention_table())
    if (t.spelling == word)
      return t.kind;
  return std::nullopt;
}

std::vector<std::string_view> attention_kind_names() {
  std::vector<std::string_view> names;
  for (const auto& t : attention_table())
    names.push_back(t.spelling);
  return names;
}

}  // namespace trainsim::workloads
