// Every topology builder: which links a route crosses (hop counts), the
// bandwidth of a path, and oversubscription visible in the uplinks. Each
// TEST builds one platform in its own process (one SimGrid engine each).
#include <gtest/gtest.h>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/scenario/cluster_loader.hpp"

namespace trainsim::sim {
namespace {

struct Platform {
  platforms::ClusterSpec spec;
  std::unique_ptr<simgrid::s4u::Engine> engine;
  ClusterZone* zone = nullptr;
  explicit Platform(const std::string& yaml)
      : spec(scenario::parse_cluster_text(yaml, "t.yaml")), engine(make_engine()) {
    zone = new ClusterZone(spec);  // owned by the engine
  }
};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : " ") + n;
  return out;
}

TEST(Topology, NvswitchNodeIsAllToAllAtFullPerGpuBandwidth) {
  Platform p("cluster: {gpu: A100, nodes: 1, nvlink: {bandwidth: 300GBps, latency: 2us, efficiency: 0.5}}\n");
  for (int b = 1; b < 8; ++b) {
    const auto path = p.zone->path(0, b);
    EXPECT_EQ(path.links, 2);
    EXPECT_DOUBLE_EQ(path.bandwidth_Bps, 150e9);
    EXPECT_DOUBLE_EQ(path.latency_s, 2e-6);
  }
  EXPECT_EQ(joined(p.zone->route_names(3, 5)), "gpu3-nvlink_UP gpu5-nvlink_DOWN");
}

TEST(Topology, CubeMeshHasOneOrTwoLanesPerPairAndPcieForTheRest) {
  Platform p("cluster: {preset: dgx1-v100, nodes: 1, nvlink: {efficiency: 1}, pcie: {efficiency: 1}}\n");
  const double lane = 150e9 / 6;
  EXPECT_EQ(p.zone->path(0, 3).links, 1);
  EXPECT_DOUBLE_EQ(p.zone->path(0, 3).bandwidth_Bps, 2 * lane);  // NV2
  EXPECT_DOUBLE_EQ(p.zone->path(0, 1).bandwidth_Bps, lane);      // NV1
  EXPECT_EQ(joined(p.zone->route_names(3, 0)), "node0-nvlink0-3_DOWN");
  // GPU 0 and GPU 5 share no NVLink: PCIe at 16 GB/s.
  EXPECT_EQ(joined(p.zone->route_names(0, 5)), "gpu0-pcie_UP gpu5-pcie_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 5).bandwidth_Bps, 16e9);
  int lanes = 0;
  for (int b = 1; b < 8; ++b)
    lanes += p.zone->nvlink_lanes(0, b);
  EXPECT_EQ(lanes, 6);
}

TEST(Topology, PcieNodeGoesThroughThePcieSwitch) {
  Platform p(
      "cluster: {gpu: A100, nodes: 2, node_shape: pcie, pcie: {bandwidth: 32GBps, latency: 6us, "
      "efficiency: 1}, nic: {bandwidth: 400Gbps}}\n");
  EXPECT_EQ(joined(p.zone->route_names(0, 1)), "gpu0-pcie_UP gpu1-pcie_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 1).latency_s, 6e-6);
  // Across nodes the PCIe link is on the way to the NIC, and is the bottleneck.
  EXPECT_EQ(joined(p.zone->route_names(0, 8)), "gpu0-pcie_UP node0-nic0_UP node1-nic0_DOWN gpu8-pcie_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 8).bandwidth_Bps, 32e9);
}

TEST(Topology, SharedNicsCarryTheirGpusTrafficThroughPcie) {
  Platform p("cluster: {preset: dgx1-v100, nodes: 2, fabric: {topology: single_switch, efficiency: 1}}\n");
  // GPUs 0 and 1 share NIC 0; GPUs 6 and 7 share NIC 3.
  EXPECT_EQ(joined(p.zone->route_names(1, 15)), "gpu1-pcie_UP node0-nic0_UP node1-nic3_DOWN gpu15-pcie_DOWN");
  EXPECT_EQ(p.zone->nic_index(0), p.zone->nic_index(1));
  EXPECT_NE(p.zone->nic_index(1), p.zone->nic_index(2));
  EXPECT_DOUBLE_EQ(p.zone->path(1, 15).bandwidth_Bps, 100e9 / 8);
}

TEST(Topology, SingleSwitchIsTwoNicHops) {
  Platform p(
      "cluster: {gpu: A100, nodes: 4, nic: {bandwidth: 200Gbps, latency: 5us}, "
      "fabric: {topology: single_switch, efficiency: 0.9}}\n");
  const auto path = p.zone->path(2, 30);
  EXPECT_EQ(joined(p.zone->route_names(2, 30)), "node0-nic2_UP node3-nic6_DOWN");
  EXPECT_DOUBLE_EQ(path.bandwidth_Bps, 0.9 * 25e9);
  EXPECT_DOUBLE_EQ(path.latency_s, 5e-6);
}

TEST(Topology, TwoLevelFatTreeUplinksShowOversubscription) {
  Platform p(
      "cluster: {gpu: A100, nodes: 4, nic: {bandwidth: 200Gbps, latency: 5us}, fabric: {topology: fat_tree, "
      "nodes_per_leaf: 2, oversubscription: 4, spine_latency: 1us, efficiency: 1}}\n");
  // Same leaf (nodes 0 and 1): two hops.
  EXPECT_EQ(p.zone->path(0, 8).links, 2);
  EXPECT_DOUBLE_EQ(p.zone->path(0, 8).latency_s, 5e-6);
  // Across the spine: NIC, leaf uplink up, leaf uplink down, NIC.
  EXPECT_EQ(joined(p.zone->route_names(0, 16)),
            "node0-nic0_UP leaf0-uplink_UP leaf1-uplink_DOWN node2-nic0_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 16).latency_s, 6e-6);
  // A leaf carries 2 nodes x 8 NICs x 25 GB/s = 400 GB/s down, 100 GB/s up.
  std::vector<simgrid::s4u::Link*> uplink;
  p.zone->for_each_link(0, 16, [&](simgrid::s4u::Link* l) { uplink.push_back(l); });
  EXPECT_DOUBLE_EQ(uplink[1]->get_bandwidth(), 400e9 / 4);
}

TEST(Topology, ThreeLevelFatTreeCrossesTheCoreBetweenPods) {
  Platform p(
      "cluster: {gpu: A100, nodes: 8, nic: {bandwidth: 200Gbps}, fabric: {topology: fat_tree, levels: 3, "
      "nodes_per_leaf: 2, leaves_per_pod: 2, oversubscription: 1, pod_oversubscription: 2, "
      "spine_latency: 1us, core_latency: 3us, efficiency: 1}}\n");
  EXPECT_EQ(p.zone->path(0, 8).links, 2);   // same leaf
  EXPECT_EQ(p.zone->path(0, 16).links, 4);  // same pod, other leaf
  EXPECT_EQ(
      joined(p.zone->route_names(0, 32)),
      "node0-nic0_UP leaf0-uplink_UP pod0-uplink_UP pod1-uplink_DOWN leaf2-uplink_DOWN node4-nic0_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 32).latency_s - p.zone->path(0, 16).latency_s, 3e-6);
  std::vector<simgrid::s4u::Link*> links;
  p.zone->for_each_link(0, 32, [&](simgrid::s4u::Link* l) { links.push_back(l); });
  EXPECT_DOUBLE_EQ(links[1]->get_bandwidth(), 400e9);      // leaf: 16 NICs x 25 GB/s, 1:1
  EXPECT_DOUBLE_EQ(links[2]->get_bandwidth(), 800e9 / 2);  // pod: two leaves, 2:1
}

TEST(Topology, RailOptimisedKeepsEachRailOnItsOwnSwitch) {
  Platform p(
      "cluster: {gpu: H100, nodes: 4, nic: {bandwidth: 400Gbps}, fabric: {topology: rail_optimised, "
      "nodes_per_leaf: 2, oversubscription: 2, efficiency: 1}}\n");
  // Rail 3 of nodes 0 and 1: one rail switch, two hops.
  EXPECT_EQ(joined(p.zone->route_names(3, 11)), "node0-nic3_UP node1-nic3_DOWN");
  // Rail 3 to rail 4, same rail group: through the spine.
  EXPECT_EQ(p.zone->path(3, 12).links, 4);
  // Same rail, other rail group: through the spine too.
  EXPECT_EQ(joined(p.zone->route_names(3, 19)),
            "node0-nic3_UP leaf3-uplink_UP leaf11-uplink_DOWN node2-nic3_DOWN");
  std::vector<simgrid::s4u::Link*> links;
  p.zone->for_each_link(3, 19, [&](simgrid::s4u::Link* l) { links.push_back(l); });
  EXPECT_DOUBLE_EQ(links[1]->get_bandwidth(), 2 * 50e9 / 2);  // 2 NICs on the rail switch, 2:1
}

TEST(Topology, DragonflyRoutesMinimallyThroughOneGlobalLink) {
  Platform p(
      "cluster: {gpu: A100, nodes: 16, gpus_per_node: 1, nic: {bandwidth: 200Gbps}, fabric: {topology: "
      "dragonfly, nodes_per_router: 2, routers_per_group: 4, local_bandwidth: 800Gbps, global_bandwidth: "
      "400Gbps, hop_latency: 1us, efficiency: 1}}\n");
  EXPECT_EQ(p.zone->path(0, 1).links, 2);  // same router
  EXPECT_EQ(joined(p.zone->route_names(0, 2)), "node0-nic0_UP group0-local0-1_UP node2-nic0_DOWN");
  // Group 0 router 0 to group 1 router 3 (node 14): the global link 0-1 leaves
  // group 0 at router 1 and enters group 1 at router 0.
  EXPECT_EQ(joined(p.zone->route_names(0, 14)),
            "node0-nic0_UP group0-local0-1_UP global0-1_UP group1-local0-3_UP node14-nic0_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 14).latency_s - p.zone->path(0, 1).latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(p.zone->path(0, 14).bandwidth_Bps, 25e9);
  EXPECT_DOUBLE_EQ(p.zone->path(14, 0).latency_s, p.zone->path(0, 14).latency_s);
}

TEST(Topology, TorusRoutesAreShortestAroundTheRings) {
  Platform p(
      "cluster: {gpu: A100, nodes: 32, gpus_per_node: 1, nic: {bandwidth: 200Gbps}, fabric: {topology: "
      "torus, dims: [8, 4], link_bandwidth: 100Gbps, hop_latency: 1us, efficiency: 1}}\n");
  // Node 0 = (0,0); node 7 = (7,0) is one hop away through the wrap link.
  EXPECT_EQ(joined(p.zone->route_names(0, 7)), "node0-nic0_UP node7-torus0_DOWN node7-nic0_DOWN");
  // (0,0) to (4,2): 4 hops along x, 2 along y.
  EXPECT_EQ(p.zone->path(0, 4 + 2 * 8).links, 2 + 6);
  EXPECT_DOUBLE_EQ(p.zone->path(0, 20).latency_s - p.zone->path(0, 1).latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(p.zone->path(0, 1).bandwidth_Bps, 100e9 / 8);
}

TEST(Topology, MixedClusterPathsAreLimitedByTheSlowerSide) {
  Platform p("cluster: {preset: mixed-a100-h100, fabric: {efficiency: 1}}\n");
  // A100 node NICs are 200 Gb/s, H100 node NICs 400 Gb/s.
  EXPECT_DOUBLE_EQ(p.zone->path(0, 128).bandwidth_Bps, 25e9);
  EXPECT_DOUBLE_EQ(p.zone->path(128, 136).bandwidth_Bps, 50e9);
  EXPECT_EQ(p.zone->node_of(128), 16);
  EXPECT_EQ(p.spec.gpu_of(128).name, "H100-SXM");
  EXPECT_TRUE(p.zone->has_nvls(16));
  EXPECT_FALSE(p.zone->has_nvls(0));
}

TEST(Topology, TraysOfOneNvlinkDomainTalkOverNvlinkNotNics) {
  // Two GB200 NVL72 racks: 36 trays of 4 GPUs, 72 GPUs per NVLink domain.
  Platform p("cluster: {preset: gb200-nvl72, nodes: 36}\n");
  EXPECT_EQ(p.zone->node_of(5), 1);
  EXPECT_EQ(p.zone->domain_of(5), 0);
  EXPECT_EQ(p.zone->domain_of(71), 0);
  EXPECT_EQ(p.zone->domain_of(72), 1);
  // GPU 0 (tray 0) to GPU 5 (tray 1), and to the rack's last GPU: their ports,
  // through the NVLink Switch trays, at NVLink 5's 900 GB/s x 0.8.
  EXPECT_EQ(joined(p.zone->route_names(0, 5)), "gpu0-nvlink_UP gpu5-nvlink_DOWN");
  EXPECT_EQ(joined(p.zone->route_names(3, 71)), "gpu3-nvlink_UP gpu71-nvlink_DOWN");
  EXPECT_DOUBLE_EQ(p.zone->path(0, 5).bandwidth_Bps, 720e9);
  EXPECT_DOUBLE_EQ(p.zone->path(0, 5).latency_s, 1e-6);
  // Another rack: the trays' own NICs, each rack a rail group of its own.
  EXPECT_EQ(joined(p.zone->route_names(0, 72)),
            "node0-nic0_UP leaf0-uplink_UP leaf4-uplink_DOWN node18-nic0_DOWN");
  EXPECT_EQ(joined(p.zone->route_names(6, 78)),
            "node1-nic2_UP leaf2-uplink_UP leaf6-uplink_DOWN node19-nic2_DOWN");
}

TEST(Topology, AnNvlinkDomainHasOneNvlsSwitchForAllItsTrays) {
  Platform p("cluster: {preset: gb200-nvl72, nodes: 36}\n");
  EXPECT_TRUE(p.zone->has_nvls(0));
  EXPECT_TRUE(p.zone->has_nvls(1));
  const int sw = p.zone->switch_endpoint(1);
  EXPECT_EQ(sw, 144 + 1);
  EXPECT_EQ(joined(p.zone->route_names(100, sw)), "gpu100-nvlink_UP");
  EXPECT_EQ(p.zone->endpoint_host(sw)->get_name(), "domain1-nvswitch");
}

TEST(Topology, NvlinkDomainsOfOneNodeKeepTheirNodesNames) {
  // nvlink_domain equal to gpus_per_node is today's node: its NVLS switch
  // keeps the node's name, and two nodes talk over their NICs.
  Platform p("cluster: {preset: dgx-h100-ndr, nodes: 2, nvlink_domain: 8}\n");
  EXPECT_EQ(p.zone->domain_of(8), 1);
  EXPECT_EQ(p.zone->endpoint_host(p.zone->switch_endpoint(1))->get_name(), "node1-nvswitch");
  EXPECT_EQ(joined(p.zone->route_names(0, 8)), "node0-nic0_UP node1-nic0_DOWN");
}

TEST(Topology, FullMeshPutsEveryGpuPairOnALinkOfItsOwn) {
  // MI300X: 7 Infinity Fabric links per GPU, 448 GB/s per direction over all
  // 7, so 64 GB/s per link and direction, x 0.71 (the slowest link's share
  // in AMD's TransferBench table: 45.44 GB/s).
  Platform p("cluster: {preset: mi300x-roce, nodes: 2}\n");
  for (int b = 1; b < 8; ++b) {
    EXPECT_EQ(p.zone->path(0, b).links, 1);
    EXPECT_DOUBLE_EQ(p.zone->path(0, b).bandwidth_Bps, 45.44e9);
    EXPECT_DOUBLE_EQ(p.zone->path(0, b).latency_s, 1e-6);
  }
  EXPECT_EQ(joined(p.zone->route_names(2, 5)), "node0-mesh2-5_UP");
  EXPECT_EQ(joined(p.zone->route_names(5, 2)), "node0-mesh2-5_DOWN");
  EXPECT_EQ(joined(p.zone->route_names(14, 9)), "node1-mesh1-6_DOWN");
  // To another node: PCIe to the GPU's own NIC, no mesh link.
  EXPECT_EQ(joined(p.zone->route_names(3, 11)), "gpu3-pcie_UP node0-nic3_UP node1-nic3_DOWN gpu11-pcie_DOWN");
}

TEST(Topology, NvlsSwitchEndpointsUseTheGpuPorts) {
  Platform p("cluster: {preset: dgx-h100-ndr, nodes: 1}\n");
  const int sw = p.zone->switch_endpoint(0);
  EXPECT_EQ(joined(p.zone->route_names(2, sw)), "gpu2-nvlink_UP");
  EXPECT_EQ(joined(p.zone->route_names(sw, 5)), "gpu5-nvlink_DOWN");
}

// latency_s() walks a route without reading its links (the expansions' latency
// terms); it must be path()'s latency for every pair of endpoints, switches
// included, on every kind of route.
void expect_latency_is_the_paths(const ClusterZone& zone, int endpoints) {
  int pairs = 0;
  for (int a = 0; a < endpoints; ++a)
    for (int b = 0; b < endpoints; ++b) {
      if (a == b || (a >= zone.gpu_count() && b >= zone.gpu_count()))
        continue;
      ASSERT_EQ(zone.latency_s(a, b), zone.path(a, b).latency_s) << a << " -> " << b;
      ++pairs;
    }
  EXPECT_GT(pairs, 0);
}

TEST(Topology, LatencyAloneIsThePathsOnAMixedClusterWithAFatTree) {
  Platform p("cluster: {preset: mixed-a100-h100, nic: {latency: 3us}, fabric: {spine_latency: 2us}}\n");
  expect_latency_is_the_paths(*p.zone, p.zone->gpu_count());
}

TEST(Topology, LatencyAloneIsThePathsOnCubeMeshLanesPcieAndSharedNics) {
  Platform p(
      "cluster: {preset: dgx1-v100, nodes: 2, pcie: {latency: 7us}, fabric: {topology: single_switch}}\n");
  expect_latency_is_the_paths(*p.zone, p.zone->gpu_count());
}

TEST(Topology, LatencyAloneIsThePathsAcrossTraysAndToTheNvlsSwitches) {
  Platform p("cluster: {preset: gb200-nvl72, nodes: 36, nic: {latency: 4us}}\n");
  expect_latency_is_the_paths(*p.zone, p.zone->switch_endpoint(1) + 1);
}

}  // namespace
}  // namespace trainsim::sim
