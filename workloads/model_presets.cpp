#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include "workloads/model_spec.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec gpt(std::string name, int layers, int hidden, int heads) {
  return ModelSpec{.name = std::move(name),
                   .layers = layers,
                   .hidden = hidden,
                   .heads = heads,
                   .kv_heads = heads,
                   .ffn_hidden = 4 * hidden,
                   .seq_len = 2048,
                   .vocab = 51200,  // GPT-2 BPE padded to a multiple of 1024 (Megatron)
                   .swiglu = false,
                   .learned_positions = true,
                   .tied_embeddings = true};
}

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
                   .tied_embeddings = false};
}

// Shapes from the GPT-3 paper (Brown et al. 2020, Table 2.1) and the Llama 2
// / Llama 3 model cards (config.json on the Hugging Face hub).
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
      llama("llama2-7b", 32, 4096, 32, 32, 11008, 4096, 32000),
      llama("llama2-13b", 40, 5120, 40, 40, 13824, 4096, 32000),
      llama("llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000),
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

std::string model_preset_names_for_message() {
  std::string out;
  for (const auto& m : presets())
    out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

}  // namespace trainsim::workloads
