#pragma once
// The cluster a scenario runs on, as plain data (no SimGrid): what the
// platform builder in sim/ turns into hosts and links, and what the cost
// model reads GPU speeds from.
//
//            spine (non-blocking core)
//        ____/      |       \____
//   leaf uplink  leaf uplink  ...      aggregate per leaf, capacity =
//       |            |                 downlink capacity / oversubscription
//     leaf 0       leaf 1 ...          nodes_per_leaf nodes under each leaf
//    /  |  \  (leaf to NICs)
//  NIC NIC NIC   one NIC per GPU (bandwidth per GPU, per direction)
//   |   |   |
//  GPU GPU GPU == NVSwitch ==  GPUs of a node talk over NVLink
#include <string>
#include <vector>

#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {

// One link direction's capacity and its one-way latency.
struct LinkSpec {
  double bandwidth_Bps = 0;
  double latency_s = 0;
};

enum class FabricTopology { single_switch, fat_tree };
std::string_view to_string(FabricTopology topology);

struct FabricSpec {
  FabricTopology topology = FabricTopology::single_switch;
  // fat_tree: nodes attached to one leaf switch.
  int nodes_per_leaf = 4;
  // fat_tree: leaf downlink capacity / uplink capacity (1 = full bisection).
  double oversubscription = 1.0;
  // fat_tree: latency added by the trip through the spine (both hops).
  double spine_latency_s = 0;
};

// Nodes of one kind. A homogeneous cluster has one group; a mixed cluster
// (for example A100 and H100 nodes on one fabric) has several, and GPU ranks
// are numbered group by group, node by node.
struct NodeGroup {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  // NVLink / NVSwitch: per GPU, per direction; latency GPU to GPU.
  LinkSpec nvlink;
  // Network interface: one per GPU, per direction; latency GPU to GPU
  // through one leaf switch.
  LinkSpec nic;
};

struct ClusterSpec {
  std::string name;
  std::vector<NodeGroup> groups;
  FabricSpec fabric;

  int node_count() const;
  int gpu_count() const;
  // Where a GPU rank lives.
  struct Location {
    int group;
    int node;        // global node index
    int local_rank;  // index of the GPU within its node
  };
  Location locate(int gpu) const;
  const NodeGroup& group_of(int gpu) const { return groups.at(static_cast<std::size_t>(locate(gpu).group)); }
  const GpuSpec& gpu_of(int gpu) const { return group_of(gpu).gpu; }
};

}  // namespace trainsim::platforms
