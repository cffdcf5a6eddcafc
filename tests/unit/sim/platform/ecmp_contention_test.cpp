// ECMP over explicit spine planes (cluster.fabric.ecmp,
// platforms/fabrics/ecmp.hpp) replayed by SimGrid: hash collisions on a
// plane slow the flows that meet there, spreading avoids them, and a
// transfer split into sub-flows over every plane gets the aggregate uplink
// back; each against the closed form. Each TEST is one simulation.
#include <gtest/gtest.h>

#include <functional>

#include "platforms/fabric_layout.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using workloads::CollectiveOp;

// 4 nodes x 1 GPU, two nodes per leaf switch: rings {0, 2} and {1, 3} both
// cross from leaf 0 to leaf 1. A 2-rank ring all-reduce is 2 steps of S/2.
constexpr double B = 25e9, a = 5e-6, S = 512e6;

platforms::ClusterSpec two_leaves(double oversubscription, int planes, int flows, platforms::EcmpHash hash,
                                  unsigned long long seed = 0) {
  auto cluster = testing::uniform_cluster(4, 1, B, a);
  cluster.fabric.topology = platforms::FabricTopology::fat_tree;
  cluster.fabric.nodes_per_leaf = 2;
  cluster.fabric.oversubscription = oversubscription;
  cluster.fabric.ecmp.planes = planes;
  cluster.fabric.ecmp.flows_per_pair = flows;
  cluster.fabric.ecmp.hash = hash;
  cluster.fabric.ecmp.seed = seed;
  return cluster;
}

// The fabric links a transfer between two nodes' NIC 0 crosses, in order.
std::vector<std::size_t> fabric_links(const platforms::ClusterSpec& cluster, int from, int to) {
  std::vector<platforms::FabricHop> hops;
  platforms::make_fabric_layout(cluster)->route(from, 0, to, 0, hops);
  std::vector<std::size_t> links;
  for (const auto& hop : hops)
    links.push_back(hop.link);
  return links;
}

// The first seed whose planes satisfy `wanted`.
unsigned long long seed_where(double oversubscription, int planes, int flows,
                              const std::function<bool(const platforms::ClusterSpec&)>& wanted) {
  for (unsigned long long seed = 0; seed < 1000; ++seed)
    if (wanted(two_leaves(oversubscription, planes, flows, platforms::EcmpHash::seeded, seed)))
      return seed;
  ADD_FAILURE() << "no seed in 0..999 hashes the flows as the test needs";
  return 0;
}

// All-reduces of S over each group at once; returns when each ended.
std::vector<double> run(const platforms::ClusterSpec& cluster, const std::vector<std::vector<int>>& groups) {
  workloads::TaskGraph graph;
  graph.gpu_count = cluster.gpu_count();
  std::vector<workloads::TaskId> tasks;
  for (const auto& members : groups)
    tasks.push_back(graph.add({.kind = workloads::TaskKind::collective,
                               .comm = workloads::CommKind::dp,
                               .op = CollectiveOp::all_reduce,
                               .group = graph.add_group(members),
                               .bytes = S}));
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  graph.seal();
  const auto timeline = replay(graph, *zone);
  std::vector<double> ends(tasks.size(), 0.0);
  for (const auto& r : timeline.records)
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (r.task == tasks[i])
        ends[i] = std::max(ends[i], r.end_s);
  return ends;
}

// Each step of S/2 at `rate`.
double ring_s(double rate_Bps) {
  return 2 * (a + S / 2 / rate_Bps);
}

// Full bisection: 2 planes of one NIC's bandwidth each. Spread puts the
// leaf's port-0 and port-1 NICs on planes 0 and 1: both rings at the NIC
// rate.
TEST(EcmpContention, TwoSpreadRingsRunAtTheNicRate) {
  const auto ends = run(two_leaves(1, 2, 1, platforms::EcmpHash::spread), {{0, 2}, {1, 3}});
  EXPECT_NEAR(ends[0] / ring_s(B), 1.0, 1e-3);
  EXPECT_NEAR(ends[1] / ring_s(B), 1.0, 1e-3);
}

// A seed that hashes both rings' flows (each direction) onto one plane:
// they share it, at half a NIC each.
TEST(EcmpContention, TwoRingsHashedOntoOnePlaneShareIt) {
  const auto seed = seed_where(1, 2, 1, [](const platforms::ClusterSpec& c) {
    return fabric_links(c, 0, 2) == fabric_links(c, 1, 3) && fabric_links(c, 2, 0) == fabric_links(c, 3, 1);
  });
  const auto ends = run(two_leaves(1, 2, 1, platforms::EcmpHash::seeded, seed), {{0, 2}, {1, 3}});
  EXPECT_NEAR(ends[0] / ring_s(B / 2), 1.0, 1e-3);
  EXPECT_NEAR(ends[1] / ring_s(B / 2), 1.0, 1e-3);
}

// Two sub-flows spread over both planes: each plane carries half of both
// rings, as the default aggregate uplink does (Contention.
// FullBisectionLetsThemRunAsIfAlone): the NIC rate.
TEST(EcmpContention, SubFlowsOverEveryPlaneRunAsOnTheAggregateUplink) {
  const auto ends = run(two_leaves(1, 2, 2, platforms::EcmpHash::spread), {{0, 2}, {1, 3}});
  EXPECT_NEAR(ends[0] / ring_s(B), 1.0, 1e-3);
  EXPECT_NEAR(ends[1] / ring_s(B), 1.0, 1e-3);
}

// 2:1 oversubscribed: the leaf's uplinks carry one NIC's worth, as 2 planes
// of B/2. One flow alone gets one plane.
TEST(EcmpContention, ALoneFlowGetsOnePlane) {
  const auto ends = run(two_leaves(2, 2, 1, platforms::EcmpHash::spread), {{0, 2}});
  EXPECT_NEAR(ends[0] / ring_s(B / 2), 1.0, 1e-3);
}

// Two sub-flows on distinct planes: both planes, the NIC rate.
TEST(EcmpContention, ALoneTransferSpreadOverBothPlanesGetsTheNicRate) {
  const auto ends = run(two_leaves(2, 2, 2, platforms::EcmpHash::spread), {{0, 2}});
  EXPECT_NEAR(ends[0] / ring_s(B), 1.0, 1e-3);
}

// Two sub-flows hashed onto one plane: the route lists it twice, SimGrid
// counts it twice: one plane, B/2.
TEST(EcmpContention, TwoSubFlowsHashedOntoOnePlaneGetOnePlane) {
  const auto seed = seed_where(2, 2, 2, [](const platforms::ClusterSpec& c) {
    const auto there = fabric_links(c, 0, 2), back = fabric_links(c, 2, 0);
    return there[0] == there[1] && back[0] == back[1];
  });
  const auto ends = run(two_leaves(2, 2, 2, platforms::EcmpHash::seeded, seed), {{0, 2}});
  EXPECT_NEAR(ends[0] / ring_s(B / 2), 1.0, 1e-3);
}

}  // namespace
}  // namespace trainsim::sim
