#pragma once
// The calibrated defaults of a cluster's links, fabric and collectives: what
// a node group or fabric gets for what its description does not say,
// whether it comes from a scenario file, a preset or code. The values and
// their calibration are in docs/collectives.md.
#include "platforms/cluster_spec.hpp"
#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {

// NVLink: calibrated on nccl-tests all-reduce of one DGX A100 node: per-step
// latency and the achievable fraction of the per-GPU NVLink bandwidth.
inline constexpr double kNvlinkLatency_s = 4e-6;
inline constexpr double kNvlinkEfficiency = 0.73;
// NCCL's fixed cost per collective (same calibration).
inline constexpr double kLaunchLatency_s = 30e-6;
// PCIe between GPUs (through the PCIe switches / host bridge) and its
// achievable fraction (transaction-layer overheads).
inline constexpr double kPcieLatency_s = 6e-6;
inline constexpr double kPcieEfficiency = 0.8;
inline constexpr double kDefaultPcie_Bps = 32e9;      // Gen4 x16, when a user-defined GPU gives none
inline constexpr double kDefaultNic_Bps = 200e9 / 8;  // HDR InfiniBand, 200 Gb/s
inline constexpr int kDefaultGpusPerNode = 8;

// What InfiniBand and RoCE change: GPU-to-GPU latency through one switch,
// extra latency per level crossed, per router hop, and the fraction of the
// line rate NCCL reaches. RoCE switches add more latency per hop and its
// congestion control leaves more of the line rate unused.
struct TechnologyDefaults {
  double nic_latency_s, spine_latency_s, hop_latency_s, efficiency;
};
TechnologyDefaults technology_defaults(FabricTechnology technology);

// One node group of `gpu`: 8 GPUs per node on an NVSwitch, one NIC per GPU,
// every link at its calibrated default (NVLink and PCIe bandwidth from the
// GPU's catalogue entry, or kDefaultPcie_Bps; an HDR NIC; latencies and
// efficiencies as above, the NIC's latency from the fabric technology).
NodeGroup calibrated_node_group(const GpuSpec& gpu, int nodes, FabricTechnology technology);

// The fabric's efficiency and spine, core and router-hop latencies at their
// technology's defaults.
void apply_technology_defaults(FabricSpec& fabric);

}  // namespace trainsim::platforms
