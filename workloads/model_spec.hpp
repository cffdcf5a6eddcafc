#pragma once
// A transformer's shape and the FLOP / parameter formulas that follow from it
// (../shared/reference/cost-models.md, Narayanan et al. SC21).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/expert_routing.hpp"

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
  // the router balances its load perfectly (routing: balanced).
  double capacity_factor = 1.0;
  // No capacity: every expert takes the copies routed to it (Megatron's
  // default, and Megatron-Bridge's MoE benchmark rows). False when a
  // capacity_factor is given: experts padded or cut to it, the excess
  // dropped. The two differ only when routing is not balanced.
  bool dropless = true;
  // How the router spreads the copies over the experts
  // (workloads/expert_routing.hpp).
  RoutingSpec routing;
  // Which residue of layer_freq marks a MoE layer: l % layer_freq ==
  // layer_offset. 0 for DeepSeek's rule; Llama 4 Maverick's MoE layers are
  // the odd ones (Hugging Face modeling_llama4.py: interleave_moe_layer_step
  // 2 makes layers 1, 3, 5, ... MoE).
  int layer_offset = 0;
  // Node-limited routing (DeepSeek-V3's M = 4, Section 2.1.2): each token
  // goes to experts on at most this many nodes (NVLink domains) of its EP
  // group; 0: no limit. What it bounds is the RDMA traffic of the deepep
  // dispatcher (workloads/moe_dispatch.hpp).
  int max_nodes_per_token = 0;
  // Group-limited routing (Megatron's moe_router_num_groups /
  // moe_router_group_topk; DeepSeek-V3: 8 and 4): the experts in
  // router_num_groups equal groups, each token's top_k among the
  // router_group_topk groups it scores best. 0: not set (both or neither).
  // What it bounds is the deepep dispatcher's traffic
  // (workloads/group_limited_routing.hpp).
  int router_num_groups = 0;
  int router_group_topk = 0;
};

// How a layer's attention projects its queries, keys and values
// (workloads/attention.hpp holds the table of kinds and their formulas).
enum class AttentionKind {
  mha,  // multi-head attention: Q, K, V projections of heads / kv_heads x head_dim (GQA when fewer kv heads)
  mla,  // multi-head latent attention (DeepSeek-V2 / V3): low-rank Q and joint KV compression
};

// Multi-head latent attention's shape (DeepSeek-V2, arXiv 2405.04434,
// Section 2.1; DeepSeek-V3 inference/model.py, class MLA; Megatron-core
// multi_latent_attention.py). Per token:
//   q = W_uq norm(W_dq x)            [h -> q_lora_rank -> heads x (nope + rope)]
//       (or W_q x when q_lora_rank is 0: DeepSeek-V2-Lite)
//   c_kv, k_pe = W_dkv x             [h -> kv_lora_rank + rope], k_pe shared by the heads
//   k_nope, v = W_ukv norm(c_kv)     [kv_lora_rank -> heads x (nope + v)]
//   out = W_o attention(q, [k_nope, k_pe], v)   [heads x v -> h]
// workloads/mla_attention.hpp has its parameters, FLOPs, kernels and
// activations.
struct MlaSpec {
  int q_lora_rank = 0;  // 0: no query compression
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
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
  AttentionKind attention = AttentionKind::mha;
  // Width of one attention head when it is not hidden / heads (Qwen3,
  // Llama 4, Megatron's kv_channels); 0: hidden / heads. Multi-head
  // attention only.
  int head_dim = 0;
  // RMSNorm on each head's query and key before the scores (Qwen3's q_norm
  // and k_norm: a head_dim weight each).
  bool qk_norm = false;
  MlaSpec mla;  // attention == mla
  // Multi-token prediction (DeepSeek-V3, Section 2.2; Megatron-core
  // multi_token_prediction.py): mtp_depth sequential modules after the last
  // layer, each an RMSNorm of the hidden state and of the next token's
  // embedding, a 2h x h projection, one transformer layer (a MoE layer when
  // the model's last layer is one, as Megatron builds it) and the shared
  // output head with its own loss. They live on the last pipeline stage.
  int mtp_depth = 0;

  bool is_moe() const { return moe.experts > 0; }
  bool is_mla() const { return attention == AttentionKind::mla; }
  // One head's width: head_dim when given, else hidden / heads.
  double attention_head_dim() const;
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

  // Multi-token prediction (mtp_depth modules; 0 without): their layers are
  // MoE layers when the model's last layer is one.
  bool mtp_layers_are_moe() const { return is_moe_layer(layers - 1); }
  // Parameters of the mtp_depth modules (two norms, the 2h x h projection,
  // the layer, the module's final norm; the embedding and output head are
  // the model's, shared). Not in parameter_count(), as published totals
  // leave them out (DeepSeek-V3: 671B main model + MTP).
  double mtp_parameters() const;
  // Of those, the routed experts' (what expert parallelism shards).
  double mtp_expert_parameters() const;
  // Forward FLOPs of the modules for `micro_batch` sequences: the
  // projection (2 T 2h h), the layer and the output head (2 T h V) each.
  double mtp_forward_flops(double micro_batch) const;
  // ... of which the attention core (what selective recomputation redoes).
  double mtp_attention_core_forward_flops(double micro_batch) const;

  // Forward FLOPs of one layer for `tokens` = b * s tokens: matmuls plus the
  // attention score and context products (24 b s h^2 + 4 b s^2 h for GPT).
  double layer_forward_flops(double micro_batch) const;
  // The same for layer `layer`; a MoE layer's MLP part is the router
  // (2 b s h E) and top_k + shared expert MLPs on every token: FLOPs of the
  // active parameters.
  double layer_forward_flops(double micro_batch, int layer) const;
  // Layers [first, first + count).
  double layers_forward_flops(double micro_batch, int first, int count) const;
  // The attention core alone (4 b s^2 h; MLA 2 b s^2 heads (qk_head_dim +
  // v_head_dim)): what selective recomputation redoes.
  double attention_core_forward_flops(double micro_batch) const;
  // Logit layer forward: 2 b s h V.
  double logits_forward_flops(double micro_batch) const;
  // Model FLOPs of one training iteration over `global_batch` sequences
  // (forward + backward, no recomputation): 72 B s L h^2 (1 + s/6h + V/12Lh)
  // for GPT; a MoE model counts its active parameters; multi-token
  // prediction adds its modules' (as Megatron's num_floating_point_operations).
  double iteration_model_flops(double global_batch) const;
};

// Built-in shapes: "gpt3-125m" ... "gpt3-175b", "llama2-7b", ... Returns
// nullopt for unknown names.
std::optional<ModelSpec> find_model_preset(std::string_view name);
std::string model_preset_names_for_message();
// Every preset's name, in the catalogue's order (the scenario schema's words).
std::vector<std::string_view> model_preset_names();

}  // namespace trainsim::workloads
