// The `cluster` section: a preset to start from, GPU type (catalogue name or
// a user-defined GPU), node groups and their shape, links, fabric, and how
// collectives run. Keys at the cluster level are the defaults of every entry
// of `groups` (mixed clusters); without `groups` they describe the one group.
// Defaults are documented in README.md; the calibrated ones in
// docs/collectives.md.
#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>

#include "platforms/calibrated_defaults.hpp"
#include "platforms/efficiency_profile.hpp"
#include "platforms/fabric_layout.hpp"
#include "platforms/input_file.hpp"
#include "platforms/presets.hpp"
#include "platforms/spelling.hpp"
#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {
namespace {
namespace fs = std::filesystem;

using platforms::FabricTechnology;
using platforms::FabricTopology;
using platforms::NodeShape;

struct LinkInput {
  std::optional<double> bandwidth_Bps, latency_s, efficiency;
};

// One node group as written: cluster-level keys, then a group's own keys on
// top. Unset fields take their defaults in resolve_group.
struct GroupInput {
  std::optional<platforms::GpuSpec> gpu;
  std::optional<int> nodes, gpus_per_node, nics_per_node, nvlink_domain;
  std::optional<NodeShape> shape;
  std::optional<bool> nvls;
  std::optional<double> nvls_efficiency;
  LinkInput nvlink, pcie, nic;
};

void read_link(std::optional<platforms::MapReader> map, LinkInput& link, bool with_efficiency) {
  if (!map)
    return;
  if (auto bw = map->bandwidth_Bps("bandwidth"))
    link.bandwidth_Bps = bw;
  if (auto lat = map->latency_s("latency"))
    link.latency_s = lat;
  if (with_efficiency)
    if (auto eff = map->number("efficiency", 1e-3, 1.0))
      link.efficiency = eff;
  map->finish();
}

// The efficiency curves a GPU names (cluster.gpu.efficiency_profile): a
// file of platforms/efficiency's format, relative to the scenario's folder;
// nullptr with an error naming the key when it cannot be read or parsed.
std::shared_ptr<const platforms::EfficiencyProfile> read_efficiency_file(platforms::MapReader& g,
                                                                         const std::string& file) {
  fs::path path(file);
  if (path.is_relative())
    path = fs::absolute(fs::path(g.source().file()).parent_path() / path).lexically_normal();
  try {
    const std::string text =
        platforms::read_input_file(path.string(), "efficiency profile", platforms::kMaxYamlInputBytes);
    return std::make_shared<const platforms::EfficiencyProfile>(
        platforms::parse_efficiency_profile(text, path.string()));
  } catch (const platforms::InputError& e) {
    for (const auto& problem : e.problems())
      g.error("efficiency_profile", problem);
  } catch (const platforms::EfficiencyDataError& e) {
    g.error("efficiency_profile", e.what());
  }
  return nullptr;
}

// A user-defined GPU: every quantity with its unit, optionally starting from
// a catalogue GPU (`base`).
std::optional<platforms::GpuSpec> read_custom_gpu(platforms::MapReader g) {
  const std::size_t before = g.error_count();
  platforms::GpuSpec gpu;
  const bool has_base = g.has("base");
  if (auto base = g.text("base")) {
    if (auto found = platforms::find_gpu(*base))
      gpu = *found;
    else
      g.error("base", fmt::format("unknown GPU '{}' (expected one of {})", *base,
                                  platforms::gpu_names_for_message()));
  }
  if (auto name = g.label("name"))
    gpu.name = *name;
  else if (!g.has("name"))
    g.error("name", "missing (a user-defined GPU needs a name, for example \"name: MyGPU\")");
  auto required = [&](std::string_view key, std::optional<double> value, double& field,
                      std::string_view example) {
    if (value)
      field = *value;
    else if (!g.has(key) && !has_base)
      g.error(key, fmt::format("missing (a user-defined GPU without `base` needs it, for example \"{}: {}\")",
                               key, example));
  };
  required("peak_bf16", g.flop_rate("peak_bf16"), gpu.peak_bf16_flops, "500TFLOPS");
  required("hbm", g.bytes("hbm"), gpu.hbm_bytes, "96GiB");
  required("hbm_bandwidth", g.bandwidth_Bps("hbm_bandwidth"), gpu.hbm_bandwidth_Bps, "3TBps");
  required("max_power", g.power_W("max_power"), gpu.max_power_W, "700W");
  if (auto v = g.flop_rate("peak_fp32"))
    gpu.peak_fp32_flops = *v;
  if (auto v = g.flop_rate("peak_tf32"))
    gpu.peak_tf32_flops = *v;
  if (auto v = g.flop_rate("peak_fp8"))
    gpu.peak_fp8_flops = *v;
  if (auto v = g.boolean("mxfp8"))
    gpu.mxfp8 = *v;
  if (auto v = g.bandwidth_Bps("nvlink_bandwidth"))
    gpu.nvlink_bandwidth_Bps = *v;
  if (auto v = g.bandwidth_Bps("pcie_bandwidth"))
    gpu.pcie_bandwidth_Bps = *v;
  if (auto v = g.number("matmul_efficiency", 1e-3, 1.0))
    gpu.matmul_efficiency = *v;
  if (auto file = g.text("efficiency_profile"))
    gpu.efficiency_profile = read_efficiency_file(g, *file);
  if (auto v = g.power_W("idle_power"))
    gpu.idle_power_W = *v;
  else if (!has_base)
    gpu.idle_power_W = platforms::kIdlePowerFraction * gpu.max_power_W;
  if (auto v = g.power_W("memory_power"))
    gpu.memory_power_W = *v;
  else if (!has_base)
    gpu.memory_power_W = platforms::kMemoryPowerFraction * gpu.max_power_W;
  if (auto v = g.power_W("communication_power"))
    gpu.communication_power_W = *v;
  else if (!has_base)
    gpu.communication_power_W = platforms::kCommunicationPowerFraction * gpu.max_power_W;
  if (gpu.peak_bf16_flops <= 0 && g.has("peak_bf16") && g.error_count() == before)
    g.error("peak_bf16", "must be positive (for example \"500TFLOPS\")");
  if (gpu.max_power_W > 0 && gpu.idle_power_W >= gpu.max_power_W)
    g.error("idle_power", fmt::format("{}W is not below max_power ({}W)", gpu.idle_power_W, gpu.max_power_W));
  for (auto [key, watts] : {std::pair{"memory_power", gpu.memory_power_W},
                            std::pair{"communication_power", gpu.communication_power_W}})
    if (gpu.max_power_W > 0 && watts > gpu.max_power_W)
      g.error(key, fmt::format("{}W is above max_power ({}W); expected at most the board limit", watts,
                               gpu.max_power_W));
  g.finish();
  if (g.error_count() != before)
    return std::nullopt;
  return gpu;
}

void read_group_fields(platforms::MapReader& m, GroupInput& in) {
  if (m.has("gpu") && m.node()["gpu"].IsMap()) {
    if (auto gpu = read_custom_gpu(*m.map("gpu")))
      in.gpu = gpu;
  } else if (auto name = m.text("gpu")) {
    if (auto gpu = platforms::find_gpu(*name))
      in.gpu = gpu;
    else
      m.error("gpu", fmt::format("unknown GPU '{}' (expected one of {}, or a map defining a GPU)", *name,
                                 platforms::gpu_names_for_message()));
  }
  if (auto n = m.integer("nodes", 1, kMaxCount))
    in.nodes = static_cast<int>(*n);
  if (auto n = m.integer("gpus_per_node", 1, 1024))
    in.gpus_per_node = static_cast<int>(*n);
  if (auto shape = m.choice<NodeShape>("node_shape", {{"nvswitch", NodeShape::nvswitch},
                                                      {"cube_mesh", NodeShape::cube_mesh},
                                                      {"pcie", NodeShape::pcie},
                                                      {"full_mesh", NodeShape::full_mesh}}))
    in.shape = shape;
  if (auto nvls = m.boolean("nvls"))
    in.nvls = nvls;
  if (auto e = m.number("nvls_efficiency", 1e-3, 1.0))
    in.nvls_efficiency = e;
  if (auto n = m.integer("nvlink_domain", 1, 1 << 20))
    in.nvlink_domain = static_cast<int>(*n);
  read_link(m.map("nvlink"), in.nvlink, true);
  read_link(m.map("pcie"), in.pcie, true);
  if (auto nic = m.map("nic")) {
    if (auto bw = nic->bandwidth_Bps("bandwidth"))
      in.nic.bandwidth_Bps = bw;
    if (auto lat = nic->latency_s("latency"))
      in.nic.latency_s = lat;
    if (auto per_node = nic->integer("per_node", 1, 1024))
      in.nics_per_node = static_cast<int>(*per_node);
    nic->finish();
  }
}

// Defaults, then the rules within one group, reported at `m` (the group's
// map, or the cluster's).
platforms::NodeGroup resolve_group(const GroupInput& in, const platforms::FabricSpec& fabric,
                                   platforms::MapReader& m) {
  // The calibrated defaults (platforms/calibrated_defaults.hpp), then what
  // the scenario gives.
  platforms::NodeGroup g =
      platforms::calibrated_node_group(in.gpu.value_or(platforms::GpuSpec{}), 1, fabric.technology);
  if (!in.gpu && !m.has("gpu"))
    m.error("gpu", "missing (expected a GPU name such as A100-80GB or H100-SXM, or a map defining a GPU)");
  if (in.nodes)
    g.nodes = *in.nodes;
  else if (!m.has("nodes"))
    m.error("nodes", "missing (expected the number of nodes, an integer >= 1)");
  g.gpus_per_node = in.gpus_per_node.value_or(g.gpus_per_node);
  g.shape = in.shape.value_or(g.shape);
  g.nvls = in.nvls.value_or(g.nvls);
  const auto apply = [](const LinkInput& given, platforms::LinkSpec& link) {
    link.bandwidth_Bps = given.bandwidth_Bps.value_or(link.bandwidth_Bps);
    link.latency_s = given.latency_s.value_or(link.latency_s);
    link.efficiency = given.efficiency.value_or(link.efficiency);
  };
  apply(in.nvlink, g.nvlink);
  apply(in.pcie, g.pcie);
  apply(in.nic, g.nic);
  g.nics_per_node = in.nics_per_node.value_or(g.gpus_per_node);

  if (g.shape != NodeShape::pcie && g.nvlink.bandwidth_Bps <= 0 && in.gpu)
    m.error("nvlink", fmt::format("the GPU '{}' has no NVLink bandwidth: give nvlink.bandwidth (or the GPU's "
                                  "nvlink_bandwidth), or use node_shape: pcie",
                                  g.gpu.name));
  if (g.shape == NodeShape::cube_mesh && g.gpus_per_node != platforms::kCubeMeshGpus)
    m.error("node_shape",
            fmt::format("cube_mesh is the 8-GPU DGX-1 hybrid cube-mesh, but gpus_per_node is {}",
                        g.gpus_per_node));
  if (g.shape == NodeShape::full_mesh && g.gpus_per_node < 2)
    m.error("node_shape",
            "full_mesh links every pair of a node's GPUs, but gpus_per_node is 1 (expected at "
            "least 2, for example 8 for an MI300X platform)");
  if (g.nvls && g.shape != NodeShape::nvswitch)
    m.error("nvls",
            fmt::format("in-switch reduction needs an NVSwitch, but node_shape is {}", to_string(g.shape)));
  // Used by NVLS only; kept with nvls: false, so that a preset's value
  // survives --set cluster.nvls=false.
  g.nvls_efficiency = in.nvls_efficiency.value_or(g.nvls_efficiency);
  if (in.nvlink_domain) {
    const int domain = *in.nvlink_domain;
    if (domain % g.gpus_per_node != 0)
      m.error("nvlink_domain",
              fmt::format("{} is not a multiple of gpus_per_node ({}): an NVLink domain joins whole nodes "
                          "(compute trays), for example gpus_per_node: 4 and nvlink_domain: 72 for a GB200 "
                          "NVL72 rack",
                          domain, g.gpus_per_node));
    else if (domain > g.gpus_per_node && g.shape != NodeShape::nvswitch)
      m.error("nvlink_domain",
              fmt::format("{} GPUs span {} nodes, which needs node_shape: nvswitch (NVLink Switch trays "
                          "join the nodes' NVSwitch ports), but node_shape is {}",
                          domain, domain / g.gpus_per_node, to_string(g.shape)));
    else if (domain > g.gpus_per_node)
      g.nvlink_domain = domain;
  }
  if (g.nics_per_node > g.gpus_per_node || g.gpus_per_node % g.nics_per_node != 0)
    m.error("nic",
            fmt::format("nic.per_node is {}: expected a divisor of gpus_per_node ({}): one NIC per GPU, "
                        "or NICs each shared by the same number of GPUs",
                        g.nics_per_node, g.gpus_per_node));
  return g;
}

// Which fabric values were given; the others take the technology's defaults.
struct FabricGiven {
  bool efficiency = false, spine_latency = false, core_latency = false, hop_latency = false;
};

// cluster.fabric.ecmp (platforms/fabrics/ecmp.hpp): only where there are
// spine uplinks to split.
void read_ecmp(platforms::MapReader& f, platforms::FabricSpec& fabric) {
  auto e = f.map("ecmp");
  if (!e)
    return;
  if (fabric.topology != FabricTopology::fat_tree && fabric.topology != FabricTopology::rail_optimised)
    f.error("ecmp", fmt::format("is for fat_tree and rail_optimised fabrics (their spine uplinks are what it "
                                "splits into planes), but topology is {}",
                                to_string(fabric.topology)));
  if (!e->has("planes"))
    e->error("planes", "missing (expected the number of spine planes a leaf's uplinks fan out to, e.g. 8)");
  auto& ecmp = fabric.ecmp;
  if (auto n = e->integer("planes", 1, 4096))
    ecmp.planes = static_cast<int>(*n);
  if (auto n = e->integer("flows_per_pair", 1, 256))
    ecmp.flows_per_pair = static_cast<int>(*n);
  if (auto hash = e->choice<platforms::EcmpHash>(
          "hash", {{"seeded", platforms::EcmpHash::seeded}, {"spread", platforms::EcmpHash::spread}}))
    ecmp.hash = *hash;
  if (auto seed = e->integer("seed", 0, std::numeric_limits<long long>::max()))
    ecmp.seed = static_cast<unsigned long long>(*seed);
  e->finish();
}

void read_fabric(std::optional<platforms::MapReader> f, platforms::FabricSpec& fabric, FabricGiven& given) {
  if (!f)
    return;
  std::vector<std::pair<std::string_view, FabricTopology>> topologies;
  for (const auto& kind : platforms::fabric_table())
    topologies.emplace_back(kind.name, kind.topology);
  if (auto topo = f->choice<FabricTopology>("topology", topologies))
    fabric.topology = *topo;
  if (auto tech = f->choice<FabricTechnology>(
          "technology", {{"infiniband", FabricTechnology::infiniband}, {"roce", FabricTechnology::roce}}))
    fabric.technology = *tech;
  if (auto eff = f->number("efficiency", 1e-3, 1.0)) {
    fabric.efficiency = *eff;
    given.efficiency = true;
  }
  if (auto n = f->integer("nodes_per_leaf", 1, kMaxCount))
    fabric.nodes_per_leaf = static_cast<int>(*n);
  auto ratio = [&](std::string_view key, double& field) {
    if (auto o = f->number(key, 0, 1e6)) {
      if (*o < 1)
        f->error(key,
                 fmt::format("{} is below 1 (expected downlink / uplink capacity >= 1: 1 is full bisection "
                             "bandwidth, 2 means the uplinks carry half of what the links below inject)",
                             *o));
      else
        field = *o;
    }
  };
  ratio("oversubscription", fabric.oversubscription);
  ratio("pod_oversubscription", fabric.pod_oversubscription);
  if (auto lat = f->latency_s("spine_latency")) {
    fabric.spine_latency_s = *lat;
    given.spine_latency = true;
  }
  if (auto levels = f->integer("levels", 2, 3))
    fabric.levels = static_cast<int>(*levels);
  if (auto n = f->integer("leaves_per_pod", 1, kMaxCount))
    fabric.leaves_per_pod = static_cast<int>(*n);
  if (auto lat = f->latency_s("core_latency")) {
    fabric.core_latency_s = *lat;
    given.core_latency = true;
  }
  if (auto n = f->integer("nodes_per_router", 1, kMaxCount))
    fabric.nodes_per_router = static_cast<int>(*n);
  if (auto n = f->integer("routers_per_group", 1, 4096))
    fabric.routers_per_group = static_cast<int>(*n);
  if (auto bw = f->bandwidth_Bps("local_bandwidth"))
    fabric.local_bandwidth_Bps = *bw;
  if (auto bw = f->bandwidth_Bps("global_bandwidth"))
    fabric.global_bandwidth_Bps = *bw;
  if (auto lat = f->latency_s("hop_latency")) {
    fabric.hop_latency_s = *lat;
    given.hop_latency = true;
  }
  if (auto dims = f->integer_list("dims", 1, 1 << 20)) {
    fabric.torus_dims.clear();
    for (auto d : *dims)
      fabric.torus_dims.push_back(static_cast<int>(d));
  }
  if (auto bw = f->bandwidth_Bps("link_bandwidth"))
    fabric.torus_bandwidth_Bps = *bw;
  if (f->has("ecmp"))
    read_ecmp(*f, fabric);

  // Keys each topology cannot do without.
  if (fabric.topology == FabricTopology::dragonfly) {
    for (auto key : {"local_bandwidth", "global_bandwidth"})
      if (!f->has(key))
        f->error(key,
                 "missing (a dragonfly needs the bandwidth of its router-to-router links, for example "
                 "\"800Gbps\")");
  }
  if (fabric.topology == FabricTopology::torus) {
    if (!f->has("dims"))
      f->error("dims",
               "missing (a torus needs the number of nodes along each dimension, for example [4, 4, 2])");
    if (!f->has("link_bandwidth"))
      f->error("link_bandwidth",
               "missing (a torus needs the bandwidth of a link between neighbours, for "
               "example \"400Gbps\")");
  }
  f->finish();
}

void read_collectives(std::optional<platforms::MapReader> c, platforms::CollectiveConfig& config) {
  using platforms::CollectiveAlgorithm;
  using platforms::Fidelity;
  config.launch_latency_s = platforms::kLaunchLatency_s;
  if (!c)
    return;
  if (auto a = c->choice<CollectiveAlgorithm>("algorithm", platforms::collective_algorithm_words()))
    config.algorithm = *a;
  if (auto f = c->choice<Fidelity>("fidelity", platforms::fidelity_words()))
    config.fidelity = *f;
  if (auto lat = c->latency_s("launch_latency"))
    config.launch_latency_s = *lat;
  if (auto n = c->integer("max_chunks", 1, 1 << 16))
    config.max_pipeline_chunks = static_cast<int>(*n);
  const auto steps_in_flight = c->integer("steps_in_flight", 1, platforms::kMaxRingStepsInFlight);
  if (steps_in_flight)
    config.ring_steps_in_flight = static_cast<int>(*steps_in_flight);
  if (auto p = c->choice<platforms::RingProtocol>("protocol", platforms::ring_protocol_words()))
    config.ring_protocol = *p;
  if (steps_in_flight && config.ring_protocol != platforms::RingProtocol::wire)
    c->error("steps_in_flight",
             fmt::format("applies to protocol: wire only (protocol {} keeps NCCL_STEPS = 8 ring steps in "
                         "flight); remove one of the two",
                         platforms::to_string(config.ring_protocol)));
  if (auto share = c->number("compute_interference", 0.0, platforms::kMaxComputeInterference))
    config.compute_interference = *share;
  if (auto limit = c->integer("detailed_flow_limit", 0, platforms::kMaxDetailedFlowLimit))
    config.detailed_flow_limit = *limit;
  c->finish();
}

std::vector<std::string_view> preset_names() {
  std::vector<std::string_view> names;
  for (const auto& preset : platforms::cluster_presets())
    names.push_back(preset.name);
  return names;
}

// The scenario's cluster keys a `--set cluster.preset=NAME` replaces: a
// preset chosen on the command line swaps the hardware, so the file's own
// description of it (gpu, nvlink, nic, fabric, ...) gives way to the
// preset's, and only the job's size (`nodes`) and other `--set` options stay.
// Returns the file's map without them; `replaced` gets their names.
YAML::Node keep_for_command_line_preset(const platforms::MapReader& c, const platforms::InputSource& source,
                                        std::vector<std::string>& replaced) {
  auto from_set = [&](const std::string& path, const YAML::Node& node) {
    return source.where(path, node).rfind("--set", 0) == 0;
  };
  std::function<YAML::Node(const YAML::Node&, const std::string&, bool)> keep =
      [&](const YAML::Node& map, const std::string& path, bool top) {
        YAML::Node out(YAML::NodeType::Map);
        for (const auto& kv : map) {
          const std::string key = kv.first.Scalar();
          const std::string child = path + "." + key;
          if ((top && (key == "preset" || key == "nodes")) || from_set(child, kv.second)) {
            out.force_insert(kv.first, kv.second);
          } else if (kv.second.IsMap()) {
            YAML::Node kept = keep(kv.second, child, false);
            if (kept.size() > 0)
              out.force_insert(kv.first, kept);
            if (top)
              replaced.push_back(key);
          } else if (top) {
            replaced.push_back(key);
          }
        }
        return out;
      };
  return keep(c.node(), c.key_path(""), true);
}

// Sets up `cluster` as the preset with the scenario's keys on top: maps merge
// key by key, anything else (values, lists) replaces. Errors in values that
// come from the preset name the preset's file and line.
YAML::Node merge_preset(platforms::MapReader& c, const platforms::InputSource& source,
                        std::vector<std::string>& notes) {
  auto name = c.text("preset");
  if (!name)
    return c.node();
  const auto* preset = platforms::find_cluster_preset(*name);
  if (preset == nullptr) {
    c.error("preset",
            fmt::format("unknown cluster preset '{}'{} (expected one of {})", *name,
                        platforms::did_you_mean(*name, preset_names()), platforms::cluster_preset_names()));
    return c.node();
  }
  YAML::Node top = c.node();
  if (const std::string option = c.where("preset"); option.rfind("--set", 0) == 0) {
    std::vector<std::string> replaced;
    top = keep_for_command_line_preset(c, source, replaced);
    if (!replaced.empty()) {
      std::string keys;
      for (const auto& k : replaced)
        keys += (keys.empty() ? "" : ", ") + k;
      notes.push_back(fmt::format(
          "{}: the preset's values replace the scenario's own cluster keys {} (kept: nodes and other --set "
          "options; add --set cluster.KEY=VALUE to set one on top of the preset)",
          option, keys));
    }
  }
  YAML::Node base = YAML::Load(std::string(preset->text))["cluster"];
  const auto& origins = source;
  origins.mark_origin(c.key_path(""), std::string(preset->file));
  std::function<void(YAML::Node, const YAML::Node&, const std::string&)> overlay =
      [&](YAML::Node into, const YAML::Node& top, const std::string& path) {
        for (const auto& kv : top) {
          const auto key = kv.first.Scalar();
          if (path == c.key_path("") && key == "preset")
            continue;
          const auto child_path = path + "." + key;
          if (into[key] && into[key].IsMap() && kv.second.IsMap()) {
            overlay(into[key], kv.second, child_path);
          } else if (into[key] && into[key].IsSequence() && kv.second.IsMap()) {
            // Items of a preset's list by index (--set cluster.groups.1.nodes=8).
            YAML::Node list = into[key];
            for (const auto& item : kv.second) {
              const auto index = item.first.Scalar();
              std::size_t i = 0;
              auto [ptr, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
              if (ec != std::errc() || ptr != index.data() + index.size() || i >= list.size()) {
                // Name the first value given under the bad index (a --set option or a line).
                std::string leaf = child_path + "." + index;
                YAML::Node at = item.second;
                while (at.IsMap() && at.size() > 0) {
                  leaf += "." + at.begin()->first.Scalar();
                  at = at.begin()->second;
                }
                c.errors().add(fmt::format(
                    "{}: {}: the preset's {} is a list of {} items, so '{}' is not one of "
                    "its indices (expected 0 to {})",
                    source.where(leaf, at), child_path, key, list.size(), index, list.size() - 1));
                continue;
              }
              if (list[i].IsMap() && item.second.IsMap()) {
                overlay(list[i], item.second, child_path + "." + index);
              } else {
                list[i] = item.second;
                origins.mark_origin(child_path + "." + index, "");
              }
            }
          } else if (into[key]) {
            into[key] = kv.second;
            origins.mark_origin(child_path, "");
          } else {
            // A key the preset lacks keeps its own node, and so its line.
            into.force_insert(kv.first, kv.second);
            origins.mark_origin(child_path, "");
          }
        }
      };
  overlay(base, top, c.key_path(""));
  if (base["preset"])
    c.error("preset", fmt::format("the preset '{}' names another preset, which is not supported", *name));
  return base;
}

}  // namespace

bool read_cluster_section(platforms::MapReader& outer, Scenario& scenario) {
  const std::size_t before = outer.error_count();
  const YAML::Node merged = merge_preset(outer, outer.source(), scenario.notes);
  if (outer.error_count() != before)
    return false;  // an unknown preset: the rest would only repeat it
  platforms::MapReader c(merged, outer.key_path(""), outer.source(), outer.errors(), outer.table());
  c.accept("preset");
  const std::string preset = outer.has("preset") ? outer.node()["preset"].Scalar() : "";

  auto& cluster = scenario.cluster;
  FabricGiven given;
  read_fabric(c.map("fabric"), cluster.fabric, given);
  const auto tech = platforms::technology_defaults(cluster.fabric.technology);
  if (!given.efficiency)
    cluster.fabric.efficiency = tech.efficiency;
  if (!given.spine_latency)
    cluster.fabric.spine_latency_s = tech.spine_latency_s;
  if (!given.core_latency)
    cluster.fabric.core_latency_s = cluster.fabric.spine_latency_s;
  if (!given.hop_latency)
    cluster.fabric.hop_latency_s = tech.hop_latency_s;
  read_collectives(c.map("collectives"), cluster.collectives);
  if (auto eff = c.number("compute_efficiency", 1e-3, 1.0))
    scenario.compute_efficiency = *eff;

  GroupInput defaults;
  read_group_fields(c, defaults);
  cluster.groups.clear();
  if (auto groups = c.map_list("groups")) {
    long long total = 0;
    std::string terms;
    for (auto& g : *groups) {
      GroupInput in = defaults;
      in.nodes.reset();  // the cluster-level count is the total, not each group's
      read_group_fields(g, in);
      auto group = resolve_group(in, cluster.fabric, g);
      g.finish();
      total += group.nodes;
      terms += fmt::format("{}{}", terms.empty() ? "" : " + ", group.nodes);
      cluster.groups.push_back(std::move(group));
    }
    if (defaults.nodes && *defaults.nodes != total)
      c.error("nodes",
              fmt::format("{} does not match the groups' node counts ({} = {}): give the total, or leave "
                          "cluster.nodes out",
                          *defaults.nodes, terms, total));
  } else if (!c.has("groups")) {
    cluster.groups.push_back(resolve_group(defaults, cluster.fabric, c));
  }
  if (auto name = c.label("name"))
    cluster.name = *name;
  else if (!preset.empty())
    cluster.name = preset;
  c.finish();
  if (cluster.name.empty()) {
    for (const auto& g : cluster.groups)
      if (cluster.name.find(g.gpu.name) == std::string::npos)
        cluster.name += (cluster.name.empty() ? "" : " + ") + g.gpu.name;
  }

  // Rules across the whole cluster.
  const int nodes = cluster.node_count();
  const auto& f = cluster.fabric;
  if (f.topology == FabricTopology::torus && !f.torus_dims.empty()) {
    long long capacity = 1;
    std::string shape;
    for (int d : f.torus_dims) {
      capacity *= d;
      shape += fmt::format("{}{}", shape.empty() ? "" : " x ", d);
    }
    if (capacity < nodes)
      c.error("fabric",
              fmt::format("the torus {} holds {} nodes, but the cluster has {} (expected dims whose "
                          "product is at least the node count)",
                          shape, capacity, nodes));
  }
  if (f.topology == FabricTopology::dragonfly && f.routers_per_group < 1)
    c.error("fabric", "routers_per_group must be at least 1");
  return c.error_count() == before;
}

}  // namespace trainsim::scenario
