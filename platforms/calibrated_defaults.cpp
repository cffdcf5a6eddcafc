#include "platforms/calibrated_defaults.hpp"

namespace trainsim::platforms {

TechnologyDefaults technology_defaults(FabricTechnology technology) {
  if (technology == FabricTechnology::roce)
    return {7e-6, 2e-6, 1e-6, 0.85};
  return {5e-6, 1e-6, 0.5e-6, 0.93};
}

NodeGroup calibrated_node_group(const GpuSpec& gpu, int nodes, FabricTechnology technology) {
  NodeGroup g;
  g.gpu = gpu;
  g.nodes = nodes;
  g.gpus_per_node = kDefaultGpusPerNode;
  g.shape = NodeShape::nvswitch;
  g.nvls = false;
  g.nvlink = {gpu.nvlink_bandwidth_Bps, kNvlinkLatency_s, kNvlinkEfficiency};
  g.pcie = {gpu.pcie_bandwidth_Bps > 0 ? gpu.pcie_bandwidth_Bps : kDefaultPcie_Bps, kPcieLatency_s,
            kPcieEfficiency};
  g.nic = {kDefaultNic_Bps, technology_defaults(technology).nic_latency_s, 1.0};
  g.nics_per_node = g.gpus_per_node;
  return g;
}

void apply_technology_defaults(FabricSpec& fabric) {
  const auto tech = technology_defaults(fabric.technology);
  fabric.efficiency = tech.efficiency;
  fabric.spine_latency_s = tech.spine_latency_s;
  fabric.core_latency_s = tech.spine_latency_s;
  fabric.hop_latency_s = tech.hop_latency_s;
}

}  // namespace trainsim::platforms
