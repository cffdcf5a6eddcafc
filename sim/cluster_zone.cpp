#include "sim/cluster_zone.hpp"

#include <fmt/format.h>
#include <simgrid/kernel/routing/NetPoint.hpp>

#include "sim/gpu_energy.hpp"

namespace trainsim::sim {
namespace sg = simgrid::s4u;
namespace kr = simgrid::kernel::routing;

namespace {
void push(kr::Route* into, double* latency, sg::Link* link) {
  into->link_list_.push_back(link->get_impl());
  if (latency != nullptr)
    *latency += link->get_latency();
}
}  // namespace

ClusterZone::ClusterZone(const platforms::ClusterSpec& spec) : NetZoneImpl("cluster"), spec_(spec) {
  const int gpus = spec.gpu_count();
  hosts_.reserve(static_cast<std::size_t>(gpus));
  ports_.reserve(static_cast<std::size_t>(gpus));
  for (int gpu = 0; gpu < gpus; ++gpu) {
    const auto loc = spec.locate(gpu);
    const auto& group = spec.groups[static_cast<std::size_t>(loc.group)];
    sg::Host* host = create_host(fmt::format("gpu{}", gpu), {group.gpu.peak_bf16_flops});
    set_gpu_power(host, group.gpu);
    host->seal();
    const auto id = host->get_netpoint()->id();
    if (gpu_of_netpoint_.size() <= id)
      gpu_of_netpoint_.resize(id + 1, -1);
    gpu_of_netpoint_[id] = gpu;
    hosts_.push_back(host);

    // Half the GPU-to-GPU latency on each side of the switch.
    auto* nvlink = create_split_duplex_link(fmt::format("gpu{}-nvlink", gpu), {group.nvlink.bandwidth_Bps});
    nvlink->set_latency(group.nvlink.latency_s / 2)->seal();
    auto* nic = create_split_duplex_link(fmt::format("gpu{}-nic", gpu), {group.nic.bandwidth_Bps});
    nic->set_latency(group.nic.latency_s / 2)->seal();
    ports_.push_back({loc.node, leaf_of_node(loc.node), nvlink, nic});
  }

  if (spec.fabric.topology == platforms::FabricTopology::fat_tree) {
    // Each leaf's uplink carries what its NICs can inject, divided by the
    // oversubscription ratio (ECMP over the spines assumed perfectly balanced).
    std::vector<double> downlink_Bps;
    for (int gpu = 0; gpu < gpus; ++gpu) {
      const auto leaf = static_cast<std::size_t>(ports_[static_cast<std::size_t>(gpu)].leaf);
      if (downlink_Bps.size() <= leaf)
        downlink_Bps.resize(leaf + 1, 0.0);
      downlink_Bps[leaf] += spec.group_of(gpu).nic.bandwidth_Bps;
    }
    for (std::size_t leaf = 0; leaf < downlink_Bps.size(); ++leaf) {
      auto* uplink = create_split_duplex_link(fmt::format("leaf{}-uplink", leaf),
                                              {downlink_Bps[leaf] / spec.fabric.oversubscription});
      uplink->set_latency(spec.fabric.spine_latency_s / 2)->seal();
      leaf_uplinks_.push_back(uplink);
    }
  }
  seal();
}

int ClusterZone::leaf_of_node(int node) const {
  if (spec_.fabric.topology != platforms::FabricTopology::fat_tree)
    return 0;
  return node / spec_.fabric.nodes_per_leaf;
}

void ClusterZone::get_local_route(const kr::NetPoint* src, const kr::NetPoint* dst, kr::Route* into,
                                  double* latency) {
  const auto& a = ports_[static_cast<std::size_t>(gpu_of_netpoint_[src->id()])];
  const auto& b = ports_[static_cast<std::size_t>(gpu_of_netpoint_[dst->id()])];
  if (a.node == b.node) {
    push(into, latency, a.nvlink->get_link_up());
    push(into, latency, b.nvlink->get_link_down());
    return;
  }
  push(into, latency, a.nic->get_link_up());
  if (a.leaf != b.leaf) {
    push(into, latency, leaf_uplinks_[static_cast<std::size_t>(a.leaf)]->get_link_up());
    push(into, latency, leaf_uplinks_[static_cast<std::size_t>(b.leaf)]->get_link_down());
  }
  push(into, latency, b.nic->get_link_down());
}

}  // namespace trainsim::sim
