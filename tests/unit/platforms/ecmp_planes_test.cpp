// ECMP over explicit spine planes (platforms/fabrics/ecmp.hpp): how a
// transfer's sub-flows are placed on planes, and the routes a fat-tree
// gives them, without an engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "platforms/fabric_layout.hpp"
#include "platforms/fabrics/ecmp.hpp"
#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {
namespace {

EcmpSpec ecmp(int planes, int flows, EcmpHash hash, unsigned long long seed = 0) {
  EcmpSpec e;
  e.planes = planes;
  e.flows_per_pair = flows;
  e.hash = hash;
  e.seed = seed;
  return e;
}

TEST(EcmpPlanes, SpreadPutsTheSubFlowsOfOneTransferOnDistinctPlanes) {
  for (const int port : {0, 1, 5}) {
    const auto planes = ecmp_planes(ecmp(8, 4, EcmpHash::spread), 12345, port);
    ASSERT_EQ(planes.size(), 4u);
    EXPECT_EQ(std::set<int>(planes.begin(), planes.end()).size(), 4u);
    // The NICs of a leaf fill the planes round-robin.
    EXPECT_EQ(planes[0], (port * 4) % 8);
  }
}

TEST(EcmpPlanes, SeededHashIsDeterministicInRangeAndFollowsTheSeed) {
  int moved = 0;
  for (std::uint64_t pair = 0; pair < 64; ++pair) {
    const auto a = ecmp_planes(ecmp(8, 4, EcmpHash::seeded, 7), pair, 0);
    EXPECT_EQ(a, ecmp_planes(ecmp(8, 4, EcmpHash::seeded, 7), pair, 3));  // the port plays no part
    for (const int plane : a) {
      EXPECT_GE(plane, 0);
      EXPECT_LT(plane, 8);
    }
    moved += a != ecmp_planes(ecmp(8, 4, EcmpHash::seeded, 8), pair, 0);
  }
  EXPECT_GT(moved, 32);
}

TEST(EcmpPlanes, TheBytesPerPlaneSumToTheTransfer) {
  const auto e = ecmp(4, 3, EcmpHash::seeded, 1);
  for (std::uint64_t pair = 0; pair < 16; ++pair) {
    const auto planes = ecmp_planes(e, pair, 0);
    const auto bytes = ecmp_bytes_per_plane(e, planes, 3e9);
    ASSERT_EQ(bytes.size(), 4u);
    EXPECT_DOUBLE_EQ(std::accumulate(bytes.begin(), bytes.end(), 0.0), 3e9);
    for (int p = 0; p < 4; ++p)
      EXPECT_DOUBLE_EQ(bytes[static_cast<std::size_t>(p)],
                       1e9 * static_cast<double>(std::count(planes.begin(), planes.end(), p)));
  }
}

// 8 nodes x 1 NIC of 50 GB/s, 2 nodes per leaf (uplinks 100 GB/s), 2
// leaves per pod, 3 levels, 1:2 into the core (pod uplinks 200 / 2 GB/s).
ClusterSpec three_levels(EcmpSpec e) {
  ClusterSpec spec;
  NodeGroup group;
  group.gpu = *find_gpu("H100-SXM");
  group.nodes = 8;
  group.gpus_per_node = 1;
  group.nics_per_node = 1;
  group.nic = {50e9, 1e-6};
  spec.groups = {group};
  spec.fabric.topology = FabricTopology::fat_tree;
  spec.fabric.nodes_per_leaf = 2;
  spec.fabric.levels = 3;
  spec.fabric.leaves_per_pod = 2;
  spec.fabric.pod_oversubscription = 2;
  spec.fabric.ecmp = e;
  return spec;
}

TEST(EcmpFatTree, WithoutEcmpEveryRouteCrossesOneAggregateUplinkPerTier) {
  const auto layout = make_fabric_layout(three_levels({}));
  std::vector<FabricHop> hops;
  layout->route(0, 0, 7, 0, hops);
  ASSERT_EQ(hops.size(), 4u);
  EXPECT_EQ(layout->links()[hops[0].link].name, "leaf0-uplink");
  EXPECT_EQ(layout->links()[hops[1].link].name, "pod0-uplink");
  EXPECT_DOUBLE_EQ(layout->links()[hops[0].link].bandwidth_Bps, 100e9);
  EXPECT_DOUBLE_EQ(layout->links()[hops[1].link].bandwidth_Bps, 100e9);
}

TEST(EcmpFatTree, EachSubFlowCrossesItsOwnPlaneOnEveryTier) {
  // 4 planes, 4 sub-flows spread: one transfer crosses every plane once per
  // tier; each plane link holds flows_per_pair x its quarter of the
  // aggregate (ecmp.hpp: SimGrid then gives each sub-flow its quarter).
  const auto layout = make_fabric_layout(three_levels(ecmp(4, 4, EcmpHash::spread)));
  std::vector<FabricHop> hops;
  layout->route(0, 0, 7, 0, hops);
  ASSERT_EQ(hops.size(), 16u);
  std::set<std::string> leaf_up, pod_up, pod_down, leaf_down;
  for (std::size_t i = 0; i < 16; ++i) {
    const auto& link = layout->links()[hops[i].link];
    auto& tier = i < 4 ? leaf_up : i < 8 ? pod_up : i < 12 ? pod_down : leaf_down;
    tier.insert(link.name);
    EXPECT_EQ(hops[i].up, i < 8);
    EXPECT_DOUBLE_EQ(link.bandwidth_Bps, 100e9 / 4 * 4);
  }
  EXPECT_EQ(leaf_up, (std::set<std::string>{"leaf0-plane0-uplink", "leaf0-plane1-uplink",
                                            "leaf0-plane2-uplink", "leaf0-plane3-uplink"}));
  EXPECT_EQ(pod_up.size(), 4u);
  EXPECT_EQ(pod_down, (std::set<std::string>{"pod1-plane0-uplink", "pod1-plane1-uplink", "pod1-plane2-uplink",
                                             "pod1-plane3-uplink"}));
  EXPECT_EQ(leaf_down.size(), 4u);
  // Same leaf: no spine, no plane.
  hops.clear();
  layout->route(0, 0, 1, 0, hops);
  EXPECT_TRUE(hops.empty());
  // The fold is not derived for hashed planes.
  std::vector<std::size_t> image;
  EXPECT_FALSE(layout->link_images({0, 1, 2, 3, 4, 5, 6, 7}, image).empty());
}

TEST(EcmpFatTree, SeededSubFlowsMayCollideOnAPlaneAndTheRouteListsItOncePerSubFlow) {
  // Some pair of the 8 x 7 under 2 planes and 2 sub-flows hashes both
  // sub-flows onto one plane (probability 1/2 each): its route lists that
  // plane twice per tier, and a route never lists a plane more often than it
  // has sub-flows.
  const auto layout = make_fabric_layout(three_levels(ecmp(2, 2, EcmpHash::seeded, 3)));
  int collided = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a / 2 == b / 2)
        continue;
      std::vector<FabricHop> hops;
      layout->route(a, 0, b, 0, hops);
      ASSERT_EQ(hops.size() % 2, 0u);
      collided += hops[0].link == hops[1].link;
    }
  EXPECT_GT(collided, 0);
  EXPECT_LT(collided, 48);
}

}  // namespace
}  // namespace trainsim::platforms
