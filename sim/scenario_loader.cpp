// Scenario YAML -> Scenario. Three steps, as everywhere in trainsim: parse
// every section (collecting all errors), validate across fields, then hand
// plain specs to the layers below. Nothing here touches SimGrid, so bad input
// can never reach the engine.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/scenario.hpp"
#include "sim/yaml_reader.hpp"

namespace trainsim::sim {
namespace {

using platforms::FabricTopology;
using workloads::Recompute;
using workloads::ScheduleKind;

constexpr long long kMaxCount = 1LL << 30;

// Defaults for a cluster section that leaves a link out.
constexpr double kDefaultNvlinkLatency_s = 2e-6;
constexpr double kDefaultNicBandwidth_Bps = 200e9 / 8;  // HDR InfiniBand, 200 Gb/s
constexpr double kDefaultNicLatency_s = 5e-6;

class Loader {
 public:
  Loader(const std::string& file) : source_(file) {}

  Scenario load(YAML::Node root, const std::vector<std::string>& overrides) {
    if (!root || root.IsNull())
      root = YAML::Node(YAML::NodeType::Map);
    for (const auto& o : overrides)
      apply_override(root, o, source_, errors_);
    errors_.throw_if_any();

    scenario_.file = source_.file();
    MapReader top(root, "", source_, errors_);
    scenario_.name = top.text("name").value_or(std::filesystem::path(source_.file()).stem().string());
    top.text("description");
    if (auto seed = top.integer("seed", 0, std::numeric_limits<long long>::max()))
      scenario_.seed = *seed;
    bool have_cluster = false, have_model = false, have_plan = false;
    if (auto cluster = required_map(top, "cluster", "gpu, nodes, gpus_per_node, nvlink, nic, fabric"))
      have_cluster = read_cluster(*cluster);
    if (auto model = required_map(top, "model", "a preset or layers, hidden, heads, seq_len, vocab"))
      have_model = read_model(*model);
    if (auto plan = required_map(top, "plan", "dp, tp, pp, micro_batch_size, global_batch_size, schedule"))
      have_plan = read_plan(*plan);
    top.finish();
    if (have_cluster && have_model && have_plan && errors_.empty())
      validate();
    errors_.throw_if_any();
    return std::move(scenario_);
  }

 private:
  std::optional<MapReader> required_map(MapReader& parent, std::string_view key, std::string_view expected) {
    if (!parent.has(key)) {
      parent.accept(key);
      parent.error(key, fmt::format("missing section (expected a map with {})", expected));
      return std::nullopt;
    }
    return parent.map(key);
  }

  template <class T>
  bool required(MapReader& map, std::string_view key, std::optional<T> value, T& out,
                std::string_view expected) {
    if (value) {
      out = *value;
      return true;
    }
    if (!map.has(key))
      map.error(key, fmt::format("missing (expected {})", expected));
    return false;
  }

  static std::optional<platforms::LinkSpec> read_link(std::optional<MapReader> map,
                                                      platforms::LinkSpec link) {
    if (!map)
      return link;
    if (auto bw = map->bandwidth_Bps("bandwidth"))
      link.bandwidth_Bps = *bw;
    if (auto lat = map->duration_s("latency"))
      link.latency_s = *lat;
    map->finish();
    return link;
  }

  bool read_cluster(MapReader& c) {
    const std::size_t before = errors_.size();
    platforms::NodeGroup group;
    bool ok = true;
    if (auto name = c.text("gpu")) {
      if (auto gpu = platforms::find_gpu(*name))
        group.gpu = *gpu;
      else {
        c.error("gpu", fmt::format("unknown GPU '{}' (expected one of {})", *name,
                                   platforms::gpu_names_for_message()));
        ok = false;
      }
    } else {
      if (!c.has("gpu"))
        c.error("gpu", "missing (expected a GPU name such as A100-80GB or H100-SXM)");
      ok = false;
    }
    long long nodes = 0;
    ok &=
        required(c, "nodes", c.integer("nodes", 1, kMaxCount), nodes, "the number of nodes, an integer >= 1");
    group.nodes = static_cast<int>(nodes);
    group.gpus_per_node = static_cast<int>(c.integer("gpus_per_node", 1, 1024).value_or(8));
    if (auto eff = c.number("compute_efficiency", 1e-3, 1.0))
      scenario_.compute_efficiency = *eff;

    group.nvlink = {group.gpu.nvlink_bandwidth_Bps, kDefaultNvlinkLatency_s};
    if (auto link = read_link(c.map("nvlink"), group.nvlink))
      group.nvlink = *link;
    group.nic = {kDefaultNicBandwidth_Bps, kDefaultNicLatency_s};
    if (auto link = read_link(c.map("nic"), group.nic))
      group.nic = *link;

    auto& fabric = scenario_.cluster.fabric;
    if (auto f = c.map("fabric")) {
      if (auto topo = f->choice<FabricTopology>("topology", {{"single_switch", FabricTopology::single_switch},
                                                             {"fat_tree", FabricTopology::fat_tree}}))
        fabric.topology = *topo;
      if (auto n = f->integer("nodes_per_leaf", 1, kMaxCount))
        fabric.nodes_per_leaf = static_cast<int>(*n);
      if (f->has("oversubscription")) {
        if (auto o = f->number("oversubscription", 1.0, 1e6))
          fabric.oversubscription = *o;
      }
      if (auto lat = f->duration_s("spine_latency"))
        fabric.spine_latency_s = *lat;
      f->finish();
    }
    c.finish();
    scenario_.cluster.name = group.gpu.name;
    scenario_.cluster.groups = {group};
    return ok && errors_.size() == before;
  }

  bool read_model(MapReader& m) {
    const std::size_t before = errors_.size();
    workloads::ModelSpec model;
    const bool preset = m.has("preset");
    if (auto name = m.text("preset")) {
      if (auto found = workloads::find_model_preset(*name))
        model = *found;
      else
        m.error("preset", fmt::format("unknown model preset '{}' (expected one of {})", *name,
                                      workloads::model_preset_names_for_message()));
    }
    auto field = [&](std::string_view key, int& out, long long min) {
      if (auto v = m.integer(key, min, kMaxCount))
        out = static_cast<int>(*v);
      else if (!preset && !m.has(key))
        m.error(key, fmt::format("missing (expected an integer >= {}, or a model.preset)", min));
    };
    field("layers", model.layers, 1);
    field("hidden", model.hidden, 1);
    field("heads", model.heads, 1);
    field("seq_len", model.seq_len, 1);
    field("vocab", model.vocab, 1);
    if (auto v = m.integer("kv_heads", 1, kMaxCount))
      model.kv_heads = static_cast<int>(*v);
    if (auto v = m.integer("ffn_hidden", 1, kMaxCount))
      model.ffn_hidden = static_cast<int>(*v);
    if (auto mlp = m.choice<bool>("mlp", {{"gelu", false}, {"swiglu", true}}))
      model.swiglu = *mlp;
    if (auto name = m.text("name"))
      model.name = *name;
    m.finish();
    if (model.name.empty())
      model.name = "custom";
    if (model.kv_heads == 0 || (!m.has("kv_heads") && !preset))
      model.kv_heads = model.heads;
    if (model.ffn_hidden == 0 || (!m.has("ffn_hidden") && !preset))
      model.ffn_hidden = 4 * model.hidden;
    if (errors_.size() == before) {
      if (model.hidden % model.heads != 0)
        m.error("hidden", fmt::format("{} is not divisible by model.heads = {}", model.hidden, model.heads));
      if (model.heads % model.kv_heads != 0)
        m.error("kv_heads",
                fmt::format("model.heads = {} is not divisible by {}", model.heads, model.kv_heads));
    }
    scenario_.model = model;
    return errors_.size() == before;
  }

  bool read_plan(MapReader& p) {
    const std::size_t before = errors_.size();
    auto& plan = scenario_.plan;
    plan.dp = 0;  // 0 = derive from the GPU count
    if (p.has("dp")) {
      if (auto text = p.text("dp"); text && *text != "auto") {
        if (auto dp = p.integer("dp", 1, kMaxCount))
          plan.dp = static_cast<int>(*dp);
      }
    }
    plan.tp = static_cast<int>(p.integer("tp", 1, kMaxCount).value_or(1));
    plan.pp = static_cast<int>(p.integer("pp", 1, kMaxCount).value_or(1));
    plan.micro_batch_size = static_cast<int>(p.integer("micro_batch_size", 1, kMaxCount).value_or(1));
    long long gbs = 0;
    required(p, "global_batch_size", p.integer("global_batch_size", 1, kMaxCount), gbs,
             "the global batch in sequences, an integer >= 1");
    plan.global_batch_size = static_cast<int>(gbs);
    if (auto s = p.choice<ScheduleKind>(
            "schedule", {{"gpipe", ScheduleKind::gpipe}, {"1f1b", ScheduleKind::one_f_one_b}}))
      plan.schedule = *s;
    if (auto r = p.choice<Recompute>(
            "recompute",
            {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}}))
      plan.recompute = *r;
    p.finish();
    plan_reader_ = std::make_unique<MapReader>(p);
    return errors_.size() == before;
  }

  // Cross-field rules, each reported at the key a user would change.
  void validate() {
    auto& plan = scenario_.plan;
    const auto& model = scenario_.model;
    const auto& group = scenario_.cluster.groups.front();
    MapReader& p = *plan_reader_;
    const int gpus = scenario_.cluster.gpu_count();
    if (plan.dp == 0) {
      if (gpus % (plan.tp * plan.pp) != 0) {
        p.error("tp",
                fmt::format("tp x pp = {} x {} = {} does not divide the cluster's {} GPUs, so dp cannot be "
                            "derived (cluster.nodes {} x cluster.gpus_per_node {})",
                            plan.tp, plan.pp, plan.tp * plan.pp, gpus, group.nodes, group.gpus_per_node));
        return;
      }
      plan.dp = gpus / (plan.tp * plan.pp);
    }
    if (plan.gpu_count() != gpus)
      p.error("dp", fmt::format(
                        "dp x tp x pp = {} x {} x {} = {} GPUs, but the cluster has {} (cluster.nodes {} x "
                        "cluster.gpus_per_node {}); expected the product to equal the GPU count",
                        plan.dp, plan.tp, plan.pp, plan.gpu_count(), gpus, group.nodes, group.gpus_per_node));
    if (plan.global_batch_size % (plan.micro_batch_size * plan.dp) != 0)
      p.error("global_batch_size",
              fmt::format(
                  "{} is not divisible by micro_batch_size x dp = {} x {} = {}; expected a multiple of {}",
                  plan.global_batch_size, plan.micro_batch_size, plan.dp, plan.micro_batch_size * plan.dp,
                  plan.micro_batch_size * plan.dp));
    if (model.layers % plan.pp != 0)
      p.error("pp", fmt::format("model.layers = {} is not divisible by pp = {}; expected a divisor of {}",
                                model.layers, plan.pp, model.layers));
    if (model.heads % plan.tp != 0)
      p.error("tp", fmt::format("model.heads = {} is not divisible by tp = {}; expected a divisor of {}",
                                model.heads, plan.tp, model.heads));
  }

  InputSource source_;
  ErrorList errors_;
  Scenario scenario_;
  std::unique_ptr<MapReader> plan_reader_;
};

Scenario load_from(const std::string& text, const std::string& file,
                   const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(
        {fmt::format("{}:{}:{}: not valid YAML: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg)});
  }
  return Loader(file).load(root, overrides);
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in)
    throw InputError({fmt::format("{}: cannot open the scenario file", path)});
  std::stringstream text;
  text << in.rdbuf();
  return load_from(text.str(), path, overrides);
}

Scenario parse_scenario_text(const std::string& yaml, const std::string& file,
                             const std::vector<std::string>& overrides) {
  return load_from(yaml, file, overrides);
}

}  // namespace trainsim::sim
