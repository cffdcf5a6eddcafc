#pragma once
// The cluster a scenario runs on, as plain data (no SimGrid): what the
// platform builder in sim/ (ClusterZone) turns into hosts, links and routes,
// and what the cost model reads GPU speeds from.
//
// A cluster is one or more node groups on one fabric. Inside a node, GPUs
// talk over an NVSwitch, an NVLink hybrid cube-mesh or PCIe; between nodes,
// through NICs (one per GPU, or shared) attached to the fabric:
//
//                 fabric (single switch, fat-tree, rail-optimised, dragonfly, torus)
//               /        |          |          \                 .
//           NIC 0      NIC 1  ...  NIC k      NIC 0 ...          NICs (per direction: nic.bandwidth)
//             |  PCIe    |           |           |               GPU -> PCIe switch -> NIC
//           GPU 0      GPU 1  ...  GPU 7       GPU 0 ...
//             \___ NVSwitch / cube-mesh / PCIe _/
//                      node 0                      node 1
//
// Bandwidths are per direction; every link also has an efficiency (the
// fraction of its line rate that NCCL-style transfers achieve), applied by
// the builder.
#include <string>
#include <string_view>
#include <vector>

#include "platforms/collective_config.hpp"
#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {

// One link direction's capacity, a one-way latency, and the fraction of the
// capacity transfers achieve (protocol overheads).
struct LinkSpec {
  double bandwidth_Bps = 0;
  double latency_s = 0;
  double efficiency = 1.0;
  double effective_Bps() const { return bandwidth_Bps * efficiency; }
};

// How the GPUs of a node are connected to each other.
//   nvswitch:  every GPU has one port (nvlink.bandwidth per direction) into a
//              non-blocking switch: any pair at full per-GPU bandwidth.
//   cube_mesh: NVLink hybrid cube-mesh of the DGX-1 (8 V100, 6 NVLink lanes
//              per GPU, some pairs with two lanes, some with one, some with
//              none, which then talk over PCIe).
//   pcie:      no NVLink: GPUs talk through their PCIe switch.
//   full_mesh: every GPU pair on a link of its own, no switch (AMD MI300X:
//              7 Infinity Fabric links per GPU of 128 GB/s bidirectional);
//              nvlink.bandwidth is a GPU's total over its g - 1 links, each
//              pair's link 1/(g - 1) of it per direction.
// (Values are saved in run archives: new ones go at the end.)
enum class NodeShape : unsigned char { nvswitch, cube_mesh, pcie, full_mesh };
std::string_view to_string(NodeShape shape);

// The hybrid cube-mesh's NVLink lanes between local GPUs a and b (0, 1 or 2;
// 6 per GPU), as nvidia-smi topo -m shows them on a DGX-1 with V100.
int cube_mesh_lanes(int a, int b);
inline constexpr int kCubeMeshLanesPerGpu = 6;
inline constexpr int kCubeMeshGpus = 8;

enum class FabricTopology : unsigned char { single_switch, fat_tree, rail_optimised, dragonfly, torus };
std::string_view to_string(FabricTopology topology);

// InfiniBand and RoCE differ by latency and achievable efficiency; the
// technology only chooses defaults, both stay configurable.
enum class FabricTechnology : unsigned char { infiniband, roce };
std::string_view to_string(FabricTechnology technology);

// ECMP over explicit spine planes (platforms/fabrics/ecmp.hpp): how
// fat_tree and rail_optimised split a transfer that crosses the spine.
// planes 0 (the default): a leaf's uplinks act as one aggregate link, every
// flow spread evenly over them (no hash collisions, today's model).
enum class EcmpHash : unsigned char { seeded, spread };
std::string_view to_string(EcmpHash hash);
struct EcmpSpec {
  int planes = 0;          // spine planes: a leaf's (and pod's) uplinks as this many links
  int flows_per_pair = 1;  // NCCL's QPs x channels per peer: sub-flows of one transfer
  EcmpHash hash = EcmpHash::seeded;
  unsigned long long seed = 0;  // seeded: the switches' hash seed
  bool on() const { return planes > 0; }
};

struct FabricSpec {
  FabricTopology topology = FabricTopology::single_switch;
  FabricTechnology technology = FabricTechnology::infiniband;
  // Fraction of the line rate of NICs and fabric links that transfers reach.
  double efficiency = 1.0;

  // fat_tree: nodes under one leaf switch. rail_optimised: nodes of one rail
  // group (a scalable unit), whose NIC k all attach to rail switch k.
  int nodes_per_leaf = 4;
  // fat_tree, rail_optimised: leaf downlink capacity / uplink capacity
  // (1 = full bisection), so a leaf's uplinks carry what its NICs can
  // inject divided by this.
  double oversubscription = 1.0;
  // Extra latency of a trip leaf -> spine -> leaf (both hops).
  double spine_latency_s = 0;
  // fat_tree: 2 (leaf, spine) or 3 (leaf, aggregation, core) levels.
  int levels = 2;
  // fat_tree with 3 levels: leaves per pod, and the pod uplink's
  // oversubscription (pod's leaf uplinks / pod's core uplinks).
  int leaves_per_pod = 8;
  double pod_oversubscription = 1.0;
  // Extra latency of a trip pod -> core -> pod (both hops).
  double core_latency_s = 0;

  // dragonfly: nodes on one router, routers in one group (all-to-all local
  // links inside a group, one global link between every pair of groups).
  int nodes_per_router = 4;
  int routers_per_group = 8;
  double local_bandwidth_Bps = 0;   // router to router, per direction
  double global_bandwidth_Bps = 0;  // group to group, per direction
  // dragonfly, torus: latency of one router-to-router hop.
  double hop_latency_s = 0;

  // torus: nodes along each dimension (their product holds every node) and
  // the bandwidth of the link between neighbours, per direction.
  std::vector<int> torus_dims;
  double torus_bandwidth_Bps = 0;

  // fat_tree, rail_optimised: explicit ECMP planes (off by default).
  EcmpSpec ecmp;
};

// Fraction of a GPU's effective NVLink port bandwidth (nvlink.bandwidth x
// nvlink.efficiency) that NVLS multimem loads and stores reach, unless a
// group says otherwise (nvls_efficiency). Fitted to NVIDIA's DGX H100
// nccl-tests sample (dgxc-benchmarking nccl/README.md): 8-GPU NVLS
// all-reduce 480.2 GB/s bus bandwidth at 8 GiB, i.e. an algorithm bandwidth
// of 274.4 GB/s = 0.744 x (450 GB/s x 0.82). NCCL's own tuner uses 0.85 for
// Hopper (nvlsEfficiency, src/graph/tuning.cc) on a lower link rate;
// docs/collectives.md.
inline constexpr double kNvlsPortEfficiency = 0.744;

// Rings across NVLink domains run one per rail (a NIC the group has in every
// domain), at most this many: a domain of many NICs (72 on a GB200 NVL72)
// offers more rails than rings can use, as NCCL's ring search adds channels
// of one NIC each until the GPUs' NVLink is spent (721.8 GB/s per Blackwell
// GPU, SM100_NVLINK_BW x 18 links in src/graph/topo.h, over a 400G NIC's
// ~48 GB/s: 15 channels). 16 such rings carry more than a GPU's NVLink port
// can feed; every node of 8 or fewer NICs keeps one ring per NIC.
inline constexpr int kMaxRingRails = 16;

// Nodes of one kind. A homogeneous cluster has one group; a mixed cluster
// (for example A100 and H100 nodes on one fabric) has several, and GPU ranks
// are numbered group by group, node by node.
struct NodeGroup {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  NodeShape shape = NodeShape::nvswitch;
  // NVSwitch with in-switch reduction (NVLink SHARP, H100 and later), and
  // the share of the port's effective rate its multimem transfers reach.
  bool nvls = false;
  double nvls_efficiency = kNvlsPortEfficiency;
  // GPUs per NVLink domain: 0 (the default) is the node, as on an 8-GPU
  // NVSwitch board. A multiple of gpus_per_node joins that many nodes' GPUs
  // through NVLink Switch trays into one NVSwitch fabric (GB200 NVL72: 18
  // compute trays of 4 GPUs, nvlink_domain 72): every GPU of the domain
  // reaches every other over its NVLink port, NVLS reduces across the whole
  // domain, and each node keeps its own NICs and PCIe. The group's nodes
  // fill domains in order; a last domain may hold fewer nodes.
  int nvlink_domain = 0;
  // NVLink: per GPU, per direction (all lanes together); latency GPU to GPU.
  LinkSpec nvlink;
  // PCIe: GPU to its PCIe switch, per direction; latency GPU to GPU through
  // the PCIe fabric (pcie nodes, and cube-mesh pairs without NVLink).
  LinkSpec pcie;
  // Network interface: bandwidth per NIC, per direction; latency GPU to GPU
  // through one switch (PCIe, NIC and switch included).
  LinkSpec nic;
  // NICs per node: gpus_per_node means one per GPU; fewer are shared by
  // consecutive GPUs (GPU i uses NIC i * nics_per_node / gpus_per_node),
  // whose traffic then shares the NIC and crosses PCIe to reach it.
  int nics_per_node = 8;

  int nic_of(int local_rank) const { return local_rank * nics_per_node / gpus_per_node; }
  bool shared_nics() const { return nics_per_node < gpus_per_node; }
  int gpus_per_domain() const { return nvlink_domain > 0 ? nvlink_domain : gpus_per_node; }
  int nodes_per_domain() const { return gpus_per_domain() / gpus_per_node; }
  // Domains of the group (the last one may be partial).
  int domains() const { return (nodes + nodes_per_domain() - 1) / nodes_per_domain(); }
};

struct ClusterSpec {
  std::string name;
  std::vector<NodeGroup> groups;
  FabricSpec fabric;
  CollectiveConfig collectives;

  int node_count() const;
  int gpu_count() const;
  // Where a GPU rank lives.
  struct Location {
    int group;
    int node;        // global node index
    int local_rank;  // index of the GPU within its node
    int domain;      // global NVLink domain index (the node's, unless nvlink_domain joins nodes)
  };
  Location locate(int gpu) const;
  const NodeGroup& group_of(int gpu) const { return groups.at(static_cast<std::size_t>(locate(gpu).group)); }
  const GpuSpec& gpu_of(int gpu) const { return group_of(gpu).gpu; }
  // The GPUs for people: "A100-SXM-80GB", or for a mixed cluster
  // "128 A100-SXM-80GB + 128 H100-SXM" (groups of one type added up).
  std::string gpu_description() const;
  // The group a (global) node belongs to, and the rank of its first GPU.
  int group_of_node(int node) const;
  int first_gpu_of_node(int node) const;
  // NVLink domains, numbered group by group: the domain of a (global) node,
  // and how many there are.
  int domain_of_node(int node) const;
  int domain_count() const;
};

}  // namespace trainsim::platforms
