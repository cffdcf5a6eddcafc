// The `cluster` section: GPU type, node count and shape, links, fabric.
#include <fmt/format.h>

#include "sim/scenario_sections.hpp"

namespace trainsim::sim {
namespace {

// Defaults for a cluster section that leaves a link out.
constexpr double kDefaultNvlinkLatency_s = 2e-6;
constexpr double kDefaultNicBandwidth_Bps = 200e9 / 8;  // HDR InfiniBand, 200 Gb/s
constexpr double kDefaultNicLatency_s = 5e-6;

platforms::LinkSpec read_link(std::optional<MapReader> map, platforms::LinkSpec link) {
  if (!map)
    return link;
  if (auto bw = map->bandwidth_Bps("bandwidth"))
    link.bandwidth_Bps = *bw;
  if (auto lat = map->duration_s("latency"))
    link.latency_s = *lat;
  map->finish();
  return link;
}

void read_fabric(std::optional<MapReader> f, platforms::FabricSpec& fabric) {
  using platforms::FabricTopology;
  if (!f)
    return;
  if (auto topo = f->choice<FabricTopology>("topology", {{"single_switch", FabricTopology::single_switch},
                                                         {"fat_tree", FabricTopology::fat_tree}}))
    fabric.topology = *topo;
  if (auto n = f->integer("nodes_per_leaf", 1, kMaxCount))
    fabric.nodes_per_leaf = static_cast<int>(*n);
  if (auto o = f->number("oversubscription", 1.0, 1e6))
    fabric.oversubscription = *o;
  if (auto lat = f->duration_s("spine_latency"))
    fabric.spine_latency_s = *lat;
  f->finish();
}

}  // namespace

bool read_cluster_section(MapReader& c, Scenario& scenario) {
  const std::size_t before = c.error_count();
  platforms::NodeGroup group;
  if (auto name = c.text("gpu")) {
    if (auto gpu = platforms::find_gpu(*name))
      group.gpu = *gpu;
    else
      c.error("gpu", fmt::format("unknown GPU '{}' (expected one of {})", *name,
                                 platforms::gpu_names_for_message()));
  } else if (!c.has("gpu")) {
    c.error("gpu", "missing (expected a GPU name such as A100-80GB or H100-SXM)");
  }
  if (auto nodes = c.integer("nodes", 1, kMaxCount))
    group.nodes = static_cast<int>(*nodes);
  else if (!c.has("nodes"))
    c.error("nodes", "missing (expected the number of nodes, an integer >= 1)");
  group.gpus_per_node = static_cast<int>(c.integer("gpus_per_node", 1, 1024).value_or(8));
  if (auto eff = c.number("compute_efficiency", 1e-3, 1.0))
    scenario.compute_efficiency = *eff;

  group.nvlink = read_link(c.map("nvlink"), {group.gpu.nvlink_bandwidth_Bps, kDefaultNvlinkLatency_s});
  group.nic = read_link(c.map("nic"), {kDefaultNicBandwidth_Bps, kDefaultNicLatency_s});
  read_fabric(c.map("fabric"), scenario.cluster.fabric);
  c.finish();
  scenario.cluster.name = group.gpu.name;
  scenario.cluster.groups = {group};
  return c.error_count() == before;
}

}  // namespace trainsim::sim
