#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include "workloads/model_spec.hpp"

namespace trainsim::workloads {
namespace {

// GPT-3-style (Brown et al. 2020): learned positions, tied embeddings, a 4h
// GeLU MLP, sequence length 2048, the GPT-2 BPE vocabulary padded to 51,200
// (Megatron pads to a multiple of 1,024). Trained before FlashAttention.
ModelSpec gpt(std::string name, int layers, int hidden, int heads) {
  return ModelSpec{.name = std::move(name),
                   .layers = layers,
                   .hidden = hidden,
                   .heads = heads,
                   .kv_heads = heads,
                   .ffn_hidden = 4 * hidden,
                   .seq_len = 2048,
                   .vocab = 51200,
                   .swiglu = false,
                   .learned_positions = true,
                   .tied_embeddings = true,
                   .flash_attention = false,
                   .moe = {},
                   .attention = AttentionKind::mha,
                   .head_dim = 0,
                   .qk_norm = false,
                   .mla = {},
                   .mtp_depth = 0};
}

// Llama-style: RoPE, RMSNorm, SwiGLU MLP, untied output projection, grouped-
// query attention where kv_heads < heads; trained with FlashAttention.
ModelSpec llama(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, int seq,
                int vocab) {
  return ModelSpec{.name = std::move(name),
                   .layers = layers,
                   .hidden = hidden,
                   .heads = heads,
                   .kv_heads = kv_heads,
                   .ffn_hidden = ffn,
                   .seq_len = seq,
                   .vocab = vocab,
                   .swiglu = true,
                   .learned_positions = false,
                   .tied_embeddings = false,
                   .flash_attention = true,
                   .moe = {},
                   .attention = AttentionKind::mha,
                   .head_dim = 0,
                   .qk_norm = false,
                   .mla = {},
                   .mtp_depth = 0};
}

// A MoE MLP: `experts` routed experts of expert_ffn, top_k per token,
// `shared` shared ones; layer l is a MoE layer when l >= first_dense and
// l % freq == offset. Dropless, balanced routing (the scenario may change
// both).
MoeSpec routed_experts(int experts, int top_k, int expert_ffn, int shared, int first_dense, int freq,
                       int offset) {
  MoeSpec m;
  m.experts = experts;
  m.top_k = top_k;
  m.expert_ffn_hidden = expert_ffn;
  m.shared_experts = shared;
  m.first_dense_layers = first_dense;
  m.layer_freq = freq;
  m.layer_offset = offset;
  return m;
}

// Mixture-of-experts models: Llama-style layers whose MLP is routed experts.
ModelSpec moe(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, int seq, int vocab,
              MoeSpec spec) {
  ModelSpec m = llama(std::move(name), layers, hidden, heads, kv_heads, ffn, seq, vocab);
  m.moe = spec;
  return m;
}

// DeepSeek's models: multi-head latent attention (mla_attention.hpp) and
// DeepSeekMoE layers after a dense prefix; seq_len 4,096 (DeepSeek-V3
// report, Section 4.2: "the maximum sequence length to 4K during
// pre-training"; Megatron-Bridge's DeepSeek recipes use 4,096).
ModelSpec deepseek(std::string name, int layers, int hidden, int heads, int ffn, int vocab, MlaSpec mla,
                   MoeSpec spec, int mtp_depth) {
  ModelSpec m = moe(std::move(name), layers, hidden, heads, heads, ffn, 4096, vocab, spec);
  m.attention = AttentionKind::mla;
  m.mla = mla;
  m.mtp_depth = mtp_depth;
  return m;
}

// Qwen3 MoE: grouped-query attention with 128-wide heads (head_dim, not
// hidden / heads) and RMSNorm on each head's query and key; every layer a
// MoE layer of 128 experts, no shared expert; seq_len 4,096 (Qwen3
// technical report, arXiv 2505.09388, Section 3.2: the general and
// reasoning stages train on 4,096 tokens; Megatron-Bridge's recipes too).
ModelSpec qwen3_moe(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn,
                    int expert_ffn) {
  ModelSpec m = moe(std::move(name), layers, hidden, heads, kv_heads, ffn, 4096, 151936,
                    routed_experts(128, 8, expert_ffn, 0, 0, 1, 0));
  m.head_dim = 128;
  m.qk_norm = true;
  return m;
}

// Llama 4 (text model): 48 layers of hidden 5120, 40 heads of 128, 8
// key/value heads, a 202,048 vocabulary, untied; MoE layers of 8192-wide
// experts, top-1, plus one shared expert of the same size; dense layers of
// ffn 16384 (intermediate_size_mlp). seq_len 8,192: the attention chunk
// size of its chunked-attention layers, so that full attention is exact
// here (the chunking itself is not modelled; Meta gives no pre-training
// sequence length).
ModelSpec llama4(std::string name, int experts, int layer_freq, int layer_offset) {
  return moe(std::move(name), 48, 5120, 40, 8, 16384, 8192, 202048,
             routed_experts(experts, 1, 8192, 1, 0, layer_freq, layer_offset));
}

// Sources of the shapes:
// - GPT-3: Brown et al. 2020, Table 2.1. The table's XL row (24 heads of 128
//   for d_model 2048) and 13B row (d_model 5140) are typos; Megatron and
//   every reproduction use 16 heads and 5120, as here.
// - MT-NLG 530B: Smith et al. 2022 ("Using DeepSpeed and Megatron to Train
//   Megatron-Turing NLG 530B"), Section 3: 105 layers, hidden 20480, 128 heads.
// - Megatron 1T: Narayanan et al. SC21, Table 1 (1008B row): 128 layers,
//   hidden 25600, 160 heads.
// - Llama 2: Touvron et al. 2023 and the config.json files of the Hugging Face
//   model cards (meta-llama/Llama-2-{7b,13b,70b}-hf): 4096 context, 32,000
//   vocabulary; 70B uses 8 key/value heads.
// - Llama 3 / 3.1: Llama Team 2024 ("The Llama 3 Herd of Models"), Table 3,
//   and the config.json files of meta-llama/Meta-Llama-3-{8B,70B} and
//   Llama-3.1-{8B,70B,405B}: 8 key/value heads, 128,256 vocabulary. The 3.1
//   models share the 3 shapes; their 128K context comes from a late
//   long-context stage, so seq_len is the 8,192 of pre-training.
// - Mixtral 8x7B: Jiang et al. 2024 ("Mixtral of Experts"), Table 1, and the
//   config.json of mistralai/Mixtral-8x7B-v0.1: 32 layers, hidden 4096, 32
//   heads, 8 key/value heads, 8 experts of ffn 14336 in every layer, top-2,
//   32,000 vocabulary, untied; 46.7B parameters, 12.9B active. seq_len is
//   the 4,096 of the Mistral 7B it grew from (the paper's 32K context is a
//   capability, not a stated training length).
// - DeepSeekMoE 16B: Dai et al. 2024 ("DeepSeekMoE", arXiv 2401.06066),
//   Section 5 and Appendix A, and the config.json of
//   deepseek-ai/deepseek-moe-16b-base: 28 layers, hidden 2048, 16 heads
//   (full multi-head attention), 64 routed experts of ffn 1408 plus 2
//   shared ones, top-6, the first layer dense with ffn 10944
//   (first_k_dense_replace = 1), 102,400 vocabulary, 4,096 context, untied;
//   16.4B parameters, 2.8B active.
// - DeepSeek-V3: DeepSeek-AI 2024 ("DeepSeek-V3 Technical Report", arXiv
//   2412.19437), Section 4.2, and the config.json of deepseek-ai/DeepSeek-V3
//   (= inference/configs/config_671B.json of github.com/deepseek-ai/DeepSeek-V3):
//   61 layers, hidden 7168, 128 heads, MLA with q_lora_rank 1536,
//   kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64,
//   v_head_dim 128; the first 3 layers dense (ffn 18432), then 256 routed
//   experts of 2048 plus 1 shared, top-8; 129,280 vocabulary, untied; one
//   multi-token prediction module (num_nextn_predict_layers 1). 671B
//   parameters without the MTP module (685B with it, the checkpoint's),
//   37B activated.
// - DeepSeek-V2-Lite: DeepSeek-AI 2024 ("DeepSeek-V2", arXiv 2405.04434),
//   Appendix B, and the config.json of deepseek-ai/DeepSeek-V2-Lite
//   (= inference/configs/config_16B.json of the DeepSeek-V3 repository):
//   27 layers, hidden 2048, 16 heads, MLA without query compression
//   (q_lora_rank null), kv_lora_rank 512, 128 / 64 / 128 head dims; the
//   first layer dense (ffn 10944), then 64 routed experts of 1408 plus 2
//   shared, top-6; 102,400 vocabulary, untied. 15.7B parameters, 2.4B
//   activated.
// - Qwen3-235B-A22B and Qwen3-30B-A3B: Qwen Team 2025 ("Qwen3 Technical
//   Report", arXiv 2505.09388), Table 2, and the config.json files of
//   Qwen/Qwen3-235B-A22B and Qwen/Qwen3-30B-A3B: 94 / 48 layers, hidden
//   4096 / 2048, 64 / 32 query heads and 4 key/value heads of head_dim 128,
//   qk norm, 128 experts of 1536 / 768 (moe_intermediate_size), top-8, no
//   shared expert (decoder_sparse_step 1, mlp_only_layers []), 151,936
//   vocabulary, untied. 235B / 22B and 30.5B / 3.3B.
// - Mixtral 8x22B: Mistral AI 2024 (mistral.ai/news/mixtral-8x22b) and the
//   config.json of mistralai/Mixtral-8x22B-v0.1: 56 layers, hidden 6144, 48
//   heads, 8 key/value heads, 8 experts of 16384, top-2, 32,768
//   vocabulary, untied; 141B parameters, 39B active. seq_len 4,096, as
//   mixtral-8x7b (its 64K context is a capability, not a stated training
//   length).
// - Llama 4 Scout and Maverick: Meta 2025 (ai.meta.com/blog/llama-4-
//   multimodal-intelligence) and the text_config of the config.json of
//   meta-llama/Llama-4-Scout-17B-16E and Llama-4-Maverick-17B-128E: 16
//   experts in every layer (interleave_moe_layer_step 1), or 128 experts in
//   every other layer (step 2: layers 1, 3, ..., 47, Hugging Face
//   modeling_llama4.py). 109B / 400B total with the vision encoder; the text
//   model alone 107.8B / 400.7B, 17B active.
const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> all = {
      gpt("gpt3-125m", 12, 768, 12),
      gpt("gpt3-350m", 24, 1024, 16),
      gpt("gpt3-760m", 24, 1536, 16),
      gpt("gpt3-1.3b", 24, 2048, 16),
      gpt("gpt3-2.7b", 32, 2560, 32),
      gpt("gpt3-6.7b", 32, 4096, 32),
      gpt("gpt3-13b", 40, 5120, 40),
      gpt("gpt3-175b", 96, 12288, 96),
      gpt("mt-nlg-530b", 105, 20480, 128),
      gpt("megatron-1t", 128, 25600, 160),
      llama("llama2-7b", 32, 4096, 32, 32, 11008, 4096, 32000),
      llama("llama2-13b", 40, 5120, 40, 40, 13824, 4096, 32000),
      llama("llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000),
      llama("llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256),
      llama("llama3-70b", 80, 8192, 64, 8, 28672, 8192, 128256),
      llama("llama3.1-8b", 32, 4096, 32, 8, 14336, 8192, 128256),
      llama("llama3.1-70b", 80, 8192, 64, 8, 28672, 8192, 128256),
      llama("llama3.1-405b", 126, 16384, 128, 8, 53248, 8192, 128256),
      moe("mixtral-8x7b", 32, 4096, 32, 8, 14336, 4096, 32000, routed_experts(8, 2, 14336, 0, 0, 1, 0)),
      moe("deepseek-moe-16b", 28, 2048, 16, 16, 10944, 4096, 102400, routed_experts(64, 6, 1408, 2, 1, 1, 0)),
      moe("mixtral-8x22b", 56, 6144, 48, 8, 16384, 4096, 32768, routed_experts(8, 2, 16384, 0, 0, 1, 0)),
      deepseek("deepseek-v2-lite", 27, 2048, 16, 10944, 102400,
               {.q_lora_rank = 0,
                .kv_lora_rank = 512,
                .qk_nope_head_dim = 128,
                .qk_rope_head_dim = 64,
                .v_head_dim = 128},
               routed_experts(64, 6, 1408, 2, 1, 1, 0), 0),
      deepseek("deepseek-v3", 61, 7168, 128, 18432, 129280,
               {.q_lora_rank = 1536,
                .kv_lora_rank = 512,
                .qk_nope_head_dim = 128,
                .qk_rope_head_dim = 64,
                .v_head_dim = 128},
               routed_experts(256, 8, 2048, 1, 3, 1, 0), 1),
      qwen3_moe("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 768),
      qwen3_moe("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 1536),
      llama4("llama4-scout", 16, 1, 0),
      llama4("llama4-maverick", 128, 2, 1),
  };
  return all;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::optional<ModelSpec> find_model_preset(std::string_view name) {
  for (const auto& m : presets())
    if (iequals(m.name, name))
      return m;
  return std::nullopt;
}

std::vector<std::string_view> model_preset_names() {
  std::vector<std::string_view> names;
  for (const auto& m : presets())
    names.push_back(m.name);
  return names;
}

std::string model_preset_names_for_message() {
  std::string out;
  for (const auto& m : presets())
    out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

}  // namespace trainsim::workloads
