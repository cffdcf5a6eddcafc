// The `model` section: a preset name, explicit shape numbers, or a preset
// with some numbers overridden. `flash_attention` defaults to the preset's
// published training setup (off for GPT-3, MT-NLG and Megatron 1T, on for
// Llama), and to off for explicit shapes.
#include <fmt/format.h>

#include "sim/scenario_sections.hpp"

namespace trainsim::sim {

bool read_model_section(MapReader& m, Scenario& scenario) {
  const std::size_t before = m.error_count();
  workloads::ModelSpec model;
  const bool preset = m.has("preset");
  workloads::ModelSpec base;
  if (auto name = m.text("preset")) {
    if (auto found = workloads::find_model_preset(*name))
      model = base = *found;
    else
      m.error("preset", fmt::format("unknown model preset '{}' (expected one of {})", *name,
                                    workloads::model_preset_names_for_message()));
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
  if (auto name = m.text("name"))
    model.name = *name;
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

}  // namespace trainsim::sim
