// The `model` section: a preset name, explicit shape numbers, or a preset
// with some numbers overridden. `flash_attention` defaults to the preset's
// published training setup (off for GPT-3, MT-NLG and Megatron 1T, on for
// Llama), and to off for explicit shapes.
#include <fmt/format.h>

#include <algorithm>

#include "platforms/spelling.hpp"
#include "sim/scenario/key_aliases.hpp"
#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {
namespace {

void validate_moe(platforms::MapReader& m, const workloads::ModelSpec& model);

// `model.moe`: a mixture-of-experts MLP (workloads::MoeSpec). Over a MoE
// preset, the keys given override the preset's; on a dense model the map
// makes it a MoE model and `experts` and `top_k` are required.
void read_moe(platforms::MapReader& parent, workloads::ModelSpec& model) {
  auto m = parent.map("moe");
  if (!m)
    return;
  m->set_aliases(kMoeKeyAliases);
  const std::size_t before = m->error_count();
  const bool from_preset = model.is_moe();
  auto& moe = model.moe;
  if (auto v = m->integer("experts", 1, kMaxCount))
    moe.experts = static_cast<int>(*v);
  else if (!from_preset && !m->has("experts"))
    m->error("experts", "missing (expected the number of routed experts per MoE layer, an integer >= 1)");
  if (auto v = m->integer("top_k", 1, kMaxCount))
    moe.top_k = static_cast<int>(*v);
  else if (!from_preset && !m->has("top_k"))
    m->error("top_k", "missing (expected how many experts each token goes to, an integer >= 1)");
  if (auto v = m->integer("expert_ffn_hidden", 1, kMaxCount))
    moe.expert_ffn_hidden = static_cast<int>(*v);
  if (auto v = m->integer("shared_experts", 0, kMaxCount))
    moe.shared_experts = static_cast<int>(*v);
  if (auto v = m->integer("moe_layer_freq", 1, kMaxCount))
    moe.layer_freq = static_cast<int>(*v);
  if (auto v = m->integer("first_dense_layers", 0, kMaxCount))
    moe.first_dense_layers = static_cast<int>(*v);
  if (m->has("capacity_factor")) {
    if (auto word = m->text("capacity_factor"); word && *word == "none")
      moe.capacity_factor = 1.0;  // dropless: the balanced load (docs/moe.md)
    else if (auto v = m->number("capacity_factor", 1e-3, 1e6))
      moe.capacity_factor = *v;
  }
  m->finish();
  if (m->error_count() == before && moe.experts > 0 && moe.top_k > 0 && model.layers > 0)
    validate_moe(*m, model);
}

// Rules of model.moe that depend on its other keys or the model's layers,
// each reported at the key to change.
void validate_moe(platforms::MapReader& m, const workloads::ModelSpec& model) {
  const auto& moe = model.moe;
  if (moe.top_k > moe.experts) {
    m.error(m.has("top_k") ? "top_k" : "experts",
            fmt::format("top_k = {} is more than model.moe.experts = {}; expected top_k <= experts",
                        moe.top_k, moe.experts));
    return;
  }
  if (moe.first_dense_layers >= model.layers)
    m.error("first_dense_layers",
            fmt::format("{} leaves no MoE layer among model.layers = {}; expected fewer than {}",
                        moe.first_dense_layers, model.layers, model.layers));
  else if (model.moe_layers_in(0, model.layers) == 0)
    m.error("moe_layer_freq",
            fmt::format("{} with first_dense_layers = {} selects no MoE layer among {} "
                        "layers; expected a frequency and dense prefix that leave at least one",
                        moe.layer_freq, moe.first_dense_layers, model.layers));
  const double most = double(moe.experts) / moe.top_k;
  if (moe.capacity_factor > most)
    m.error("capacity_factor",
            fmt::format("{} exceeds model.moe.experts / top_k = {}: an expert cannot take more than every "
                        "token; expected at most {}",
                        moe.capacity_factor, most, most));
}

}  // namespace

bool read_model_section(platforms::MapReader& m, Scenario& scenario) {
  const std::size_t before = m.error_count();
  m.set_aliases(kModelKeyAliases);
  workloads::ModelSpec model;
  const bool preset = m.has("preset");
  workloads::ModelSpec base;
  if (auto name = m.text("preset")) {
    if (auto found = workloads::find_model_preset(*name))
      model = base = *found;
    else {
      const std::string names = workloads::model_preset_names_for_message();
      std::vector<std::string_view> known;
      for (std::size_t start = 0; start < names.size();) {
        const auto end = std::min(names.find(", ", start), names.size());
        known.push_back(std::string_view(names).substr(start, end - start));
        start = end + 2;
      }
      m.error("preset", fmt::format("unknown model preset '{}'{} (expected one of {})", *name,
                                    platforms::did_you_mean(*name, known), names));
    }
  }
  auto field = [&](std::string_view key, int& out) {
    if (auto v = m.integer(key, 1, kMaxCount))
      out = static_cast<int>(*v);
    else if (!preset && !m.has(key))
      m.error(key, "missing (expected an integer >= 1, or a model.preset)");
  };
  field("layers", model.layers);
  field("hidden", model.hidden);
  field("heads", model.heads);
  field("seq_len", model.seq_len);
  field("vocab", model.vocab);
  if (auto v = m.integer("kv_heads", 1, kMaxCount))
    model.kv_heads = static_cast<int>(*v);
  if (auto v = m.integer("ffn_hidden", 1, kMaxCount))
    model.ffn_hidden = static_cast<int>(*v);
  if (auto mlp = m.choice<bool>("mlp", {{"gelu", false}, {"swiglu", true}}))
    model.swiglu = *mlp;
  if (auto flash = m.boolean("flash_attention"))
    model.flash_attention = *flash;
  if (auto name = m.label("name"))
    model.name = *name;
  if (m.has("moe"))
    read_moe(m, model);
  m.finish();
  if (model.name.empty())
    model.name = "custom";
  // Explicit shapes default to GPT conventions; a preset whose heads or
  // hidden size is overridden keeps its conventions (full multi-head
  // attention stays full, a 4h MLP stays 4h) unless told otherwise.
  if (!m.has("kv_heads") && (!preset || base.kv_heads == base.heads))
    model.kv_heads = model.heads;
  if (!m.has("ffn_hidden") && (!preset || base.ffn_hidden == 4 * base.hidden))
    model.ffn_hidden = 4 * model.hidden;
  // Experts default to the model's MLP size (Mixtral's experts are its
  // MLPs; fine-grained MoEs give expert_ffn_hidden).
  if (model.is_moe() && model.moe.expert_ffn_hidden == 0)
    model.moe.expert_ffn_hidden = model.ffn_hidden;
  if (m.error_count() == before) {
    if (model.hidden % model.heads != 0)
      m.error("hidden", fmt::format("{} is not divisible by model.heads = {}", model.hidden, model.heads));
    if (model.heads % model.kv_heads != 0)
      m.error("kv_heads",
              fmt::format("model.heads = {} is not divisible by {}", model.heads, model.kv_heads));
  }
  scenario.model = model;
  return m.error_count() == before;
}

}  // namespace trainsim::scenario
