#pragma once
// A transformer's shape and the FLOP / parameter formulas that follow from it
// (../shared/reference/cost-models.md, Narayanan et al. SC21).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::workloads {

// Mixture of experts (Shazeer et al. 2017; GShard; Mixtral; DeepSeekMoE):
// the MLP of a MoE layer is `experts` routed expert MLPs of
// expert_ffn_hidden each, of which a learned router (a hidden x experts
// matmul) picks top_k per token, plus `shared_experts` expert MLPs every
// token goes through (DeepSeekMoE's shared experts). docs/moe.md.
struct MoeSpec {
  int experts = 0;  // routed experts per MoE layer; 0: a dense model
  int top_k = 0;
  int expert_ffn_hidden = 0;
  int shared_experts = 0;
  // Which layers are MoE layers (DeepSeek's rule, Hugging Face
  // modeling_deepseek.py): layer l is one when l >= first_dense_layers and
  // l % layer_freq == 0. The dense layers use the model's ffn_hidden.
  int layer_freq = 1;
  int first_dense_layers = 0;
  // Expert capacity as a multiple of the balanced load (top_k x tokens /
  // experts per expert), with every expert's input padded to it (Megatron's
  // moe_expert_capacity_factor with moe_pad_expert_input_to_capacity).
  // 1.0 is also what a dropless MoE (no capacity, the default) moves when
  // the router balances its load perfectly, which trainsim assumes.
  double capacity_factor = 1.0;
};

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
  MoeSpec moe;

  bool is_moe() const { return moe.experts > 0; }
  // Layer `layer` (0-based) has a MoE MLP.
  bool is_moe_layer(int layer) const;
  // MoE layers among layers [first, first + count).
  int moe_layers_in(int first, int count) const;

  // Parameters of one dense transformer layer (weights and biases of
  // attention, MLP and the two layer norms).
  double layer_parameters() const;
  // Parameters of layer `layer`: layer_parameters() for a dense layer; for a
  // MoE layer attention, norms, router, shared experts and every routed
  // expert.
  double layer_parameters(int layer) const;
  // The routed experts' parameters of layer `layer` (0 for a dense layer):
  // what expert parallelism shards.
  double expert_parameters(int layer) const;
  // Parameters one token goes through in layer `layer` (top_k routed
  // experts of the MoE layers, everything of the dense ones).
  double active_layer_parameters(int layer) const;
  // Over the whole model: every parameter, and those one token uses
  // (the "active" count MoE papers quote).
  double active_parameter_count() const;
  double embedding_parameters() const;
  // Untied output projection (0 when tied).
  double logits_parameters() const;
  double parameter_count() const;

  // Forward FLOPs of one layer for `tokens` = b * s tokens: matmuls plus the
  // attention score and context products (24 b s h^2 + 4 b s^2 h for GPT).
  double layer_forward_flops(double micro_batch) const;
  // The same for layer `layer`; a MoE layer's MLP part is the router
  // (2 b s h E) and top_k + shared expert MLPs on every token: FLOPs of the
  // active parameters.
  double layer_forward_flops(double micro_batch, int layer) const;
  // Layers [first, first + count).
  double layers_forward_flops(double micro_batch, int first, int count) const;
  // The attention core alone (4 b s^2 h): what selective recomputation redoes.
  double attention_core_forward_flops(double micro_batch) const;
  // Logit layer forward: 2 b s h V.
  double logits_forward_flops(double micro_batch) const;
  // Model FLOPs of one training iteration over `global_batch` sequences
  // (forward + backward, no recomputation): 72 B s L h^2 (1 + s/6h + V/12Lh)
  // for GPT; a MoE model counts its active parameters.
  double iteration_model_flops(double global_batch) const;
};

// Built-in shapes: "gpt3-125m" ... "gpt3-175b", "llama2-7b", ... Returns
// nullopt for unknown names.
std::optional<ModelSpec> find_model_preset(std::string_view name);
std::string model_preset_names_for_message();
// Every preset's name, in the catalogue's order (the scenario schema's words).
std::vector<std::string_view> model_preset_names();

}  // namespace trainsim::workloads
