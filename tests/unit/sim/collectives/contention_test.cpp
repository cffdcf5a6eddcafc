// Contention is real: collectives that share a link slow each other, and an
// oversubscribed uplink is where they meet. Each TEST is one simulation.
#include <gtest/gtest.h>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using workloads::CollectiveOp;

// 4 nodes x 1 GPU, two nodes per leaf switch: rings {0, 2} and {1, 3} both
// cross from leaf 0 to leaf 1.
constexpr double B = 25e9, a = 5e-6, S = 512e6;

platforms::ClusterSpec two_leaves(double oversubscription) {
  auto cluster = testing::uniform_cluster(4, 1, B, a);
  cluster.fabric.topology = platforms::FabricTopology::fat_tree;
  cluster.fabric.nodes_per_leaf = 2;
  cluster.fabric.oversubscription = oversubscription;
  return cluster;
}

// Both all-reduces at once; returns when each ended.
std::pair<double, double> run_both(const platforms::ClusterSpec& cluster) {
  workloads::TaskGraph graph;
  graph.gpu_count = cluster.gpu_count();
  const int g0 = graph.add_group({0, 2});
  const int g1 = graph.add_group({1, 3});
  const auto t0 = graph.add({.kind = workloads::TaskKind::collective,
                             .comm = workloads::CommKind::dp,
                             .op = CollectiveOp::all_reduce,
                             .group = g0,
                             .bytes = S});
  const auto t1 = graph.add({.kind = workloads::TaskKind::collective,
                             .comm = workloads::CommKind::dp,
                             .op = CollectiveOp::all_reduce,
                             .group = g1,
                             .bytes = S});
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  graph.seal();
  const auto timeline = replay(graph, *zone);
  double end0 = 0, end1 = 0;
  for (const auto& r : timeline.records) {
    if (r.task == t0)
      end0 = r.end_s;
    if (r.task == t1)
      end1 = r.end_s;
  }
  return {end0, end1};
}

// A 2-rank ring all-reduce alone: 2 steps of S/2 at the NIC's bandwidth.
double alone_s() {
  return 2 * (a + S / 2 / B);
}

TEST(Contention, TwoAllReducesSharingAnOversubscribedUplinkSlowEachOther) {
  // 2:1 oversubscribed: a leaf's uplink carries 2 x 25 GB/s / 2 = one NIC's
  // worth, which both rings now split.
  const auto [end0, end1] = run_both(two_leaves(2));
  EXPECT_NEAR(end0 / (2 * (a + S / B)), 1.0, 1e-3);
  EXPECT_NEAR(end1, end0, 1e-9);
  EXPECT_GT(end0 / alone_s(), 1.9);
}

TEST(Contention, FullBisectionLetsThemRunAsIfAlone) {
  const auto [end0, end1] = run_both(two_leaves(1));
  EXPECT_NEAR(end0 / alone_s(), 1.0, 1e-3);
  EXPECT_NEAR(end1 / alone_s(), 1.0, 1e-3);
}

}  // namespace
}  // namespace trainsim::sim
