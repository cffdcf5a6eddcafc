// The `model` section: a preset name, explicit shape numbers, or a preset
// with some numbers overridden. `flash_attention` defaults to the preset's
// published training setup (off for GPT-3, MT-NLG and Megatron 1T, on for
// Llama), and to off for explicit shapes.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string_view>

#include "platforms/spelling.hpp"
#include "sim/scenario/expert_loads_file.hpp"
#include "sim/scenario/key_aliases.hpp"
#include "sim/scenario/sections.hpp"
#include "workloads/attention.hpp"
#include "workloads/group_limited_routing.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::scenario {
namespace {

void validate_moe(platforms::MapReader& m, const workloads::ModelSpec& model);
void read_routing(platforms::MapReader& m, workloads::ModelSpec& model, const Scenario& scenario);

// `model.moe`: a mixture-of-experts MLP (workloads::MoeSpec). Over a MoE
// preset, the keys given override the preset's; on a dense model the map
// makes it a MoE model and `experts` and `top_k` are required.
void read_moe(platforms::MapReader& parent, workloads::ModelSpec& model, const Scenario& scenario) {
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
  if (auto v = m->integer("moe_layer_offset", 0, kMaxCount))
    moe.layer_offset = static_cast<int>(*v);
  if (m->has("capacity_factor")) {
    if (auto word = m->text("capacity_factor"); word && *word == "none") {
      moe.capacity_factor = 1.0;  // dropless: the balanced load (docs/moe.md)
      moe.dropless = true;
    } else if (auto v = m->number("capacity_factor", 1e-3, 1e6)) {
      moe.capacity_factor = *v;
      moe.dropless = false;
    }
  }
  if (auto v = m->integer("max_nodes_per_token", 1, kMaxCount))
    moe.max_nodes_per_token = static_cast<int>(*v);
  if (auto v = m->integer("router_num_groups", 1, kMaxCount))
    moe.router_num_groups = static_cast<int>(*v);
  if (auto v = m->integer("router_group_topk", 1, kMaxCount))
    moe.router_group_topk = static_cast<int>(*v);
  read_routing(*m, model, scenario);
  m->finish();
  if (m->error_count() == before && moe.experts > 0 && moe.top_k > 0 && model.layers > 0)
    validate_moe(*m, model);
}

// model.moe.routing and its keys (workloads/expert_routing.hpp): the kind,
// its skew, its seed (default: the scenario's) and, for a measured table,
// the file (relative to the scenario's folder), read here; the rules
// between them in validate_routing.
void read_routing(platforms::MapReader& m, workloads::ModelSpec& model, const Scenario& scenario) {
  auto& r = model.moe.routing;
  using K = workloads::RoutingKind;
  if (auto kind = m.choice<K>("routing", {{"balanced", K::balanced},
                                          {"zipf", K::zipf},
                                          {"dirichlet", K::dirichlet},
                                          {"measured", K::measured}}))
    r.kind = *kind;
  if (auto v = m.number("routing_skew", 1e-3, 1e3))
    r.skew = *v;
  r.seed = scenario.seed;
  r.seed_from_scenario = true;
  if (auto v = m.integer("routing_seed", 0, std::numeric_limits<long long>::max())) {
    r.seed = static_cast<std::uint64_t>(*v);
    r.seed_from_scenario = false;
  }
  if (auto file = m.text("routing_file");
      file && r.kind == K::measured) {  // else validate_routing says why not
    namespace fs = std::filesystem;
    fs::path path(*file);
    if (!path.is_absolute())
      path = fs::absolute(fs::path(scenario.file).parent_path() / path).lexically_normal();
    const int experts = model.moe.experts;
    if (experts <= 0)
      return;  // reported at experts
    const ExpertLoadsFile table = read_expert_loads_file(path.string(), experts);
    for (const auto& problem : table.problems)
      m.error("routing_file", problem);
    if (table.problems.empty()) {
      r.file = *file;
      r.measured = table.layers;
    }
  }
}

// Which routing keys go with which kind, and a measured table covering
// every MoE layer (MTP modules' too), each reported at the key to change.
void validate_routing(platforms::MapReader& m, const workloads::ModelSpec& model) {
  const auto& r = model.moe.routing;
  using K = workloads::RoutingKind;
  const std::string kind(workloads::to_string(r.kind));
  const bool drawn = r.kind == K::zipf || r.kind == K::dirichlet;
  if (drawn && !m.has("routing_skew"))
    m.error("routing_skew",
            fmt::format("missing (routing: {} needs its parameter: {}; e.g. 1.0)", kind,
                        r.kind == K::zipf ? "the Zipf exponent s > 0 (the expert of rank r "
                                            "gets a share proportional to r^-s)"
                                          : "the Dirichlet concentration alpha > 0 (smaller is "
                                            "more skewed)"));
  for (const char* key : {"routing_skew", "routing_seed"})
    if (!drawn && m.has(key))
      m.error(key, fmt::format("given with routing: {}; it applies to routing: zipf or dirichlet (the seeded "
                               "draws); expected the key left out",
                               kind));
  if (r.kind != K::measured) {
    if (m.has("routing_file"))
      m.error("routing_file",
              fmt::format("given with routing: {}; a tokens-per-expert table applies to "
                          "routing: measured; expected routing: measured, or the key left out",
                          kind));
    return;
  }
  if (!m.has("routing_file")) {
    m.error("routing_file",
            "missing (routing: measured reads the tokens each expert received per layer from a "
            "CSV file: layer,expert,tokens; docs/moe.md)");
    return;
  }
  if (r.measured.empty())
    return;  // the file's own problems are reported
  const int total = model.layers + model.mtp_depth;
  bool any_layer = false;
  std::vector<int> listed;
  for (const auto& row : r.measured) {
    if (row.layer < 0) {
      any_layer = true;
      continue;
    }
    listed.push_back(row.layer);
    const bool moe_layer = row.layer < model.layers ? model.is_moe_layer(row.layer)
                                                    : row.layer < total && model.mtp_layers_are_moe();
    if (!moe_layer)
      m.error(
          "routing_file",
          fmt::format("{}: layer {} is not a MoE layer of the model (its MoE layers: l >= first_dense_layers "
                      "= {} with l % moe_layer_freq = {} == {}, of {} layers{}); expected MoE layer indices "
                      "or all",
                      r.file, row.layer, model.moe.first_dense_layers, model.moe.layer_freq,
                      model.moe.layer_offset, model.layers,
                      model.mtp_depth > 0 ? fmt::format(", then {} MTP layer(s)", model.mtp_depth) : ""));
  }
  if (any_layer)
    return;
  std::string missing;
  int count = 0;
  for (int l = 0; l < total; ++l) {
    const bool moe_layer = l < model.layers ? model.is_moe_layer(l) : model.mtp_layers_are_moe();
    if (moe_layer && std::find(listed.begin(), listed.end(), l) == listed.end() && count++ < 8)
      missing += (missing.empty() ? "" : ", ") + std::to_string(l);
  }
  if (count > 0)
    m.error("routing_file",
            fmt::format("{} gives no loads for MoE layer{} {}{}; expected a row per expert for "
                        "every MoE layer, or rows with layer all",
                        r.file, count == 1 ? "" : "s", missing, count > 8 ? ", ..." : ""));
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
  if (moe.layer_offset >= std::max(1, moe.layer_freq))
    m.error("moe_layer_offset",
            fmt::format("{} is not below model.moe.moe_layer_freq = {}: layer l is a MoE "
                        "layer when l % moe_layer_freq == moe_layer_offset; expected "
                        "0 to {}",
                        moe.layer_offset, moe.layer_freq, std::max(1, moe.layer_freq) - 1));
  validate_routing(m, model);
  for (const auto& problem : workloads::group_routing_problems(moe))
    m.error(problem.key.substr(std::string_view("model.moe.").size()), problem.message);
  const double most = double(moe.experts) / moe.top_k;
  if (moe.capacity_factor > most)
    m.error("capacity_factor",
            fmt::format("{} exceeds model.moe.experts / top_k = {}: an expert cannot take more than every "
                        "token; expected at most {}",
                        moe.capacity_factor, most, most));
}

// The keys of multi-head latent attention (workloads/mla_attention.hpp),
// in the order the README lists them.
constexpr std::string_view kMlaKeys[] = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                         "qk_rope_head_dim", "v_head_dim"};

// `model.attention` and its shape keys: MLA's five, or head_dim / qk_norm
// for multi-head attention. Over an MLA preset the keys given override the
// preset's; switching a model to MLA needs every rank and head width but
// q_lora_rank (none: queries projected directly, DeepSeek-V2-Lite).
void read_attention(platforms::MapReader& m, workloads::ModelSpec& model) {
  std::vector<std::pair<std::string_view, workloads::AttentionKind>> words;
  for (const auto& t : workloads::attention_table())
    words.emplace_back(t.spelling, t.kind);
  const bool was_mla = model.is_mla();
  if (auto kind = m.choice("attention", words))
    model.attention = *kind;
  if (auto v = m.integer("head_dim", 1, kMaxCount))
    model.head_dim = static_cast<int>(*v);
  if (auto v = m.boolean("qk_norm"))
    model.qk_norm = *v;
  auto& a = model.mla;
  if (m.has("q_lora_rank")) {
    if (auto word = m.text("q_lora_rank"); word && *word == "none")
      a.q_lora_rank = 0;
    else if (auto v = m.integer("q_lora_rank", 0, kMaxCount))
      a.q_lora_rank = static_cast<int>(*v);
  }
  const auto dimension = [&](std::string_view key, int& out, const char* what) {
    if (auto v = m.integer(key, 1, kMaxCount))
      out = static_cast<int>(*v);
    else if (model.is_mla() && !was_mla && !m.has(key))
      m.error(key, fmt::format("missing (attention: mla needs {}, an integer >= 1; e.g. DeepSeek-V3's are "
                               "kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128)",
                               what));
  };
  dimension("kv_lora_rank", a.kv_lora_rank, "the rank of the joint key/value compression");
  dimension("qk_nope_head_dim", a.qk_nope_head_dim, "the width of each head's non-rotary query and key");
  dimension("qk_rope_head_dim", a.qk_rope_head_dim, "the width of the rotary query and shared key part");
  dimension("v_head_dim", a.v_head_dim, "the width of each head's value");
}

// Rules between model.attention and the other keys, each at the key to
// change (run once every key has been read without error).
void validate_attention(platforms::MapReader& m, const workloads::ModelSpec& model) {
  if (!model.is_mla()) {
    for (std::string_view key : kMlaKeys)
      if (m.has(key))
        m.error(key, fmt::format("is a multi-head latent attention key, but model.attention is {}; expected "
                                 "attention: mla with it, or the key left out",
                                 workloads::traits_of(model.attention).spelling));
    return;
  }
  const auto mla_has_none = [&](std::string_view key, const char* why) {
    if (m.has(key))
      m.error(key,
              fmt::format("given with attention: mla, which {}; expected the key left out (MLA's shape is "
                          "q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)",
                          why));
  };
  mla_has_none("kv_heads", "has no key/value heads: every head reads the shared latent");
  mla_has_none("head_dim", "sizes its heads with qk_nope_head_dim + qk_rope_head_dim and v_head_dim");
  if (model.qk_norm)
    mla_has_none("qk_norm", "normalizes its compressed query and key/value latents instead");
  if (model.mla.qk_rope_head_dim % 2 != 0)
    m.error("qk_rope_head_dim",
            fmt::format("{} is odd: rotary embeddings rotate pairs of dimensions; expected "
                        "an even width (DeepSeek-V2 / V3 use 64)",
                        model.mla.qk_rope_head_dim));
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
  auto field = [&](std::string_view key, int& out, long long most = kMaxCount) {
    if (auto v = m.integer(key, 1, most))
      out = static_cast<int>(*v);
    else if (!preset && !m.has(key))
      m.error(key, "missing (expected an integer >= 1, or a model.preset)");
  };
  // A task names its layer in 16 bits (workloads/task_graph.hpp).
  field("layers", model.layers, workloads::kMaxTaskLayers);
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
  if (auto tied = m.boolean("tied_embeddings"))
    model.tied_embeddings = *tied;
  read_attention(m, model);
  if (auto v = m.integer("mtp_depth", 0, kMaxCount))
    model.mtp_depth = static_cast<int>(*v);
  if (auto name = m.label("name"))
    model.name = *name;
  if (m.has("moe"))
    read_moe(m, model, scenario);
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
    // Heads of their own width (head_dim, MLA's head dims) need not divide
    // the hidden size.
    if (model.hidden % model.heads != 0 && model.head_dim == 0 && !model.is_mla())
      m.error("hidden", fmt::format("{} is not divisible by model.heads = {} (or give model.head_dim)",
                                    model.hidden, model.heads));
    if (!model.is_mla() && model.heads % model.kv_heads != 0)
      m.error("kv_heads",
              fmt::format("model.heads = {} is not divisible by {}", model.heads, model.kv_heads));
    validate_attention(m, model);
  }
  scenario.model = model;
  return m.error_count() == before;
}

}  // namespace trainsim::scenario
