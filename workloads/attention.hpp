#pragma once
// The attention kinds a model can use (`model.attention`), each with the
// formulas the rest of trainsim reads from it: the block's parameters, the
// weights of its token-linear GEMMs (2 FLOPs per weight and token) and the
// FLOPs of its attention core. Adding a kind: its AttentionKind
// (model_spec.hpp), its formulas in a file of its own (mla_attention.cpp
// for MLA), one line in attention_table(), its kernels in
// transformer_ops.cpp (attention_ops) and its stored tensors in
// activation_memory.cpp.
#include <optional>
#include <string_view>
#include <vector>

#include "workloads/model_spec.hpp"

namespace trainsim::workloads {

struct AttentionTraits {
  AttentionKind kind;
  std::string_view spelling;  // the word of model.attention
  std::string_view summary;   // one line for the schema and the README
  // Weights (and biases, and any norm inside the block) of one layer's
  // attention; not the layer's input norm.
  double (*parameters)(const ModelSpec&);
  // The weights of its token-linear GEMMs: forward FLOPs = 2 x tokens x this.
  double (*matmul_parameters)(const ModelSpec&);
  // Score and context products of one layer for `micro_batch` sequences,
  // counted in full (no causal halving, trainsim's MFU convention).
  double (*core_forward_flops)(const ModelSpec&, double micro_batch);
  // Elements of the keys and values of one token (all heads), what ring
  // attention passes around: 2 x kv_heads x head_dim for MHA.
  double (*key_value_elements)(const ModelSpec&);
};

// Every kind, in the schema's order (the default first).
const std::vector<AttentionTraits>& attention_table();
const AttentionTraits& traits_of(AttentionKind kind);
std::optional<AttentionKind> attention_kind_named(std::string_view word);
std::vector<std::string_view> attention_kind_names();

}  // namespace trainsim::workloads
