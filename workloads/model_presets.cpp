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
                   .moe = {}};
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
                   .moe = {}};
}

// Mixture-of-experts models: Llama-style layers whose MLP is routed experts.
ModelSpec moe(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, int seq, int vocab,
              MoeSpec spec) {
  ModelSpec m = llama(std::move(name), layers, hidden, heads, kv_heads, ffn, seq, vocab);
  m.moe = spec;
  return m;
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
      moe("mixtral-8x7b", 32, 4096, 32, 8, 14336, 4096, 32000,
          {.experts = 8,
           .top_k = 2,
           .expert_ffn_hidden = 14336,
           .shared_experts = 0,
           .layer_freq = 1,
           .first_dense_layers = 0,
           .capacity_factor = 1.0}),
      moe("deepseek-moe-16b", 28, 2048, 16, 16, 10944, 4096, 102400,
          {.experts = 64,
           .top_k = 6,
           .expert_ffn_hidden = 1408,
           .shared_experts = 2,
           .layer_freq = 1,
           .first_dense_layers = 1,
           .capacity_factor = 1.0}),
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
