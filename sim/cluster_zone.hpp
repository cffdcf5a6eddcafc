#pragma once
// The SimGrid network of a cluster, as one netzone that computes routes on the
// fly instead of storing an n x n route table (a full zone of 4,096 GPUs takes
// 13 s and 2 GB to build; this one takes milliseconds).
//
//                   spine (non-blocking core, not a bottleneck)
//            leaf0-uplink  /                \  leaf1-uplink   aggregate per leaf:
//                  [leaf 0]                  [leaf 1]         downlinks / oversubscription
//                 /   |   \                 /   |   \         .
//        gpuN-nic (one split-duplex link per GPU, NIC to leaf)
//               |    |                      |    |
//   node 0: gpu0 gpu1 ... gpu7        node k: ...             gpuN-nvlink: GPU to NVSwitch
//            \___NVSwitch___/
//
// Routes (each link is split-duplex: UP from the sender side, DOWN to the
// receiver side, so both directions have their own capacity):
//   same node:            nvlink(a).up, nvlink(b).down
//   same leaf:            nic(a).up, nic(b).down
//   across the spine:     nic(a).up, uplink(leaf a).up, uplink(leaf b).down, nic(b).down
// A single-switch fabric is a fat-tree with every node on one leaf.
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <vector>

#include "platforms/cluster_spec.hpp"

namespace trainsim::sim {

class ClusterZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  // Creates one host per GPU (speed: its bf16 peak) and every link, then
  // seals the zone. Must be the first netzone of the process (the root).
  explicit ClusterZone(const platforms::ClusterSpec& spec);

  simgrid::s4u::Host* host(int gpu) const { return hosts_[static_cast<std::size_t>(gpu)]; }
  int gpu_count() const { return static_cast<int>(hosts_.size()); }
  int leaf_of_node(int node) const;

  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst, simgrid::kernel::routing::Route* into,
                       double* latency) override;

 private:
  struct Ports {
    int node;
    int leaf;
    simgrid::s4u::SplitDuplexLink* nvlink;
    simgrid::s4u::SplitDuplexLink* nic;
  };
  const platforms::ClusterSpec& spec_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<Ports> ports_;
  std::vector<int> gpu_of_netpoint_;
  std::vector<simgrid::s4u::SplitDuplexLink*> leaf_uplinks_;
};

}  // namespace trainsim::sim
