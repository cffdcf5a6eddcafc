#pragma once
// A transformer's shape and the FLOP / parameter formulas that follow from it
// (../shared/reference/cost-models.md, Narayanan et al. SC21).
#include <optional>
#include <string>
#include <string_view>

namespace trainsim::workloads {

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    // grouped-query attention; equal to heads for GPT
  int ffn_hidden = 0;  // 4 * hidden for GPT
  int seq_len = 0;
  int vocab = 0;
  bool swiglu = false;            // Llama-style gated MLP (three matrices)
  bool learned_positions = true;  // GPT: a seq_len x hidden position table
  bool tied_embeddings = true;    // GPT ties the logit layer to the embedding
  // A fused FlashAttention kernel instead of score / softmax / dropout /
  // context kernels: changes attention time (cost model) and removes the
  // s x s score activations (memory model).
  bool flash_attention = false;

  // Parameters of one transformer layer (weights and biases of attention,
  // MLP and the two layer norms).
  double layer_parameters() const;
  double embedding_parameters() const;
  // Untied output projection (0 when tied).
  double logits_parameters() const;
  double parameter_count() const;

  // Forward FLOPs of one layer for `tokens` = b * s tokens: matmuls plus the
  // attention score and context products (24 b s h^2 + 4 b s^2 h for GPT).
  double layer_forward_flops(double micro_batch) const;
  // The attention core alone (4 b s^2 h): what selective recomputation redoes.
  double attention_core_forward_flops(double micro_batch) const;
  // Logit layer forward: 2 b s h V.
  double logits_forward_flops(double micro_batch) const;
  // Model FLOPs of one training iteration over `global_batch` sequences
  // (forward + backward, no recomputation): 72 B s L h^2 (1 + s/6h + V/12Lh)
  // for GPT.
  double iteration_model_flops(double global_batch) const;
};

// Built-in shapes: "gpt3-125m" ... "gpt3-175b", "llama2-7b", ... Returns
// nullopt for unknown names.
std::optional<ModelSpec> find_model_preset(std::string_view name);
std::string model_preset_names_for_message();

}  // namespace trainsim::workloads
