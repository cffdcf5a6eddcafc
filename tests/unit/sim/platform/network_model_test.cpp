// The network model gives the bandwidth and latency the scenario asks for:
// one flow takes latency + S/B, a ring all-reduce takes its textbook time.
// Each TEST runs in its own process (one SimGrid engine per process).
#include <gtest/gtest.h>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using workloads::CollectiveOp;
using workloads::CommKind;
using workloads::TaskKind;

double run(const platforms::ClusterSpec& cluster, workloads::TaskGraph graph) {
  graph.gpu_count = cluster.gpu_count();
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  return replay(graph, *zone).end_s;
}

TEST(NetworkModel, OneFlowTakesLatencyPlusSizeOverBandwidth) {
  const auto cluster = testing::uniform_cluster(1, 2, 50e9, 1e-6);
  workloads::TaskGraph g;
  g.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = 1, .bytes = 1e9});
  g.seal();
  EXPECT_NEAR(run(cluster, std::move(g)), 1e-6 + 1e9 / 50e9, 1e-12);
}

TEST(NetworkModel, FlowsSharingALinkSplitItsBandwidth) {
  const auto cluster = testing::uniform_cluster(1, 3, 50e9, 0);
  workloads::TaskGraph g;
  g.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = 2, .bytes = 1e9});
  g.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 1, .peer = 2, .bytes = 1e9});
  // Both cross GPU 2's incoming NVLink direction.
  g.seal();
  EXPECT_NEAR(run(cluster, std::move(g)), 2e9 / 50e9, 1e-9);
}

double ring_all_reduce(int n, double bytes, double bandwidth, double latency) {
  return 2.0 * (n - 1) / n * bytes / bandwidth + 2.0 * (n - 1) * latency;
}

TEST(NetworkModel, RingAllReduceMatchesClosedFormWithinTwoPercent) {
  const int n = 8;
  const double bytes = 256e6, bw = 100e9, lat = 5e-6;
  const auto cluster = testing::uniform_cluster(1, n, bw, lat);
  workloads::TaskGraph g;
  std::vector<int> all(n);
  for (int i = 0; i < n; ++i)
    all[i] = i;
  const int group = g.add_group(all);
  g.add({.kind = TaskKind::collective,
         .comm = CommKind::dp,
         .op = CollectiveOp::all_reduce,
         .group = group,
         .bytes = bytes});
  const double expected = ring_all_reduce(n, bytes, bw, lat);
  g.seal();
  EXPECT_NEAR(run(cluster, std::move(g)) / expected, 1.0, 0.02);
}

TEST(NetworkModel, RingAllReduceAcrossNodesIsLimitedByTheNics) {
  // 4 nodes x 1 GPU: every ring edge crosses the fabric.
  const int n = 4;
  const double bytes = 64e6, bw = 25e9, lat = 5e-6;
  const auto cluster = testing::uniform_cluster(n, 1, bw, lat);
  workloads::TaskGraph g;
  const int group = g.add_group({0, 1, 2, 3});
  g.add({.kind = TaskKind::collective,
         .comm = CommKind::dp,
         .op = CollectiveOp::all_reduce,
         .group = group,
         .bytes = bytes});
  g.seal();
  EXPECT_NEAR(run(cluster, std::move(g)) / ring_all_reduce(n, bytes, bw, lat), 1.0, 0.02);
}

TEST(NetworkModel, FoldedCollectivesCostTheirLatencyTermsToo) {
  const int n = 4;
  const double bytes = 1e6, bw = 100e9, lat = 10e-6;
  const auto cluster = testing::uniform_cluster(1, n, bw, lat);
  workloads::TaskGraph g;
  const int group = g.add_group({0, 1, 2, 3});
  g.add({.kind = TaskKind::collective,
         .comm = CommKind::tp,
         .op = CollectiveOp::all_reduce,
         .group = group,
         .fold = 6,
         .bytes = bytes});
  g.seal();
  EXPECT_NEAR(run(cluster, std::move(g)) / (6 * ring_all_reduce(n, bytes, bw, lat)), 1.0, 1e-6);
}

}  // namespace
}  // namespace trainsim::sim
