// Compute/communication interference (cluster.collectives.compute_interference):
// while a GPU sends, receives or takes part in a collective, its compute runs
// at (1 - share) of its speed; off (share 0) it runs at full speed. Each TEST
// is one simulation.
#include <gtest/gtest.h>

#include <vector>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

constexpr double B = 25e9, a = 5e-6, S = 64e6, kCompute_s = 0.01;

struct Ends {
  std::vector<double> start, end;
};

Ends replay_with(const TaskGraph& graph, double share) {
  auto cluster = testing::uniform_cluster(graph.gpu_count, 1, B, a);
  cluster.collectives.compute_interference = share;
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  Ends out{std::vector<double>(graph.size(), -1), std::vector<double>(graph.size(), -1)};
  for (const auto& r : timeline.records) {
    out.start[r.task] = r.start_s;
    out.end[r.task] = r.end_s;
  }
  return out;
}

// GPU 0 computes while it sends to GPU 1; GPU 1 computes once the send is
// in; GPUs 2 and 3 exchange the same bytes with no compute beside them.
struct Overlap {
  TaskGraph graph;
  TaskId compute0, send, compute1, reference_send;
  Overlap() {
    graph.gpu_count = 4;
    compute0 = graph.add({.kind = TaskKind::forward, .gpu = 0, .duration_s = kCompute_s});
    send =
        graph.add({.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 0, .peer = 1, .bytes = S});
    compute1 = graph.add({.kind = TaskKind::forward, .gpu = 1, .duration_s = kCompute_s});
    graph.depend(send, compute1);
    reference_send =
        graph.add({.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 2, .peer = 3, .bytes = S});
    graph.seal();
  }
};

TEST(ComputeInterference, ComputeOverlappingASendRunsAtTheRestOfItsSpeed) {
  const Overlap o;
  const double share = 0.25;
  const auto r = replay_with(o.graph, share);
  const double send_s = r.end[o.send];
  ASSERT_GT(send_s, S / B);
  ASSERT_LT(send_s, kCompute_s);
  // (1 - share) of the speed while the send runs, full speed after it.
  EXPECT_NEAR(r.end[o.compute0], kCompute_s + share * send_s, 1e-9);
  // The send itself is not slowed, and compute after it runs at full speed.
  EXPECT_DOUBLE_EQ(r.end[o.send], r.end[o.reference_send]);
  EXPECT_NEAR(r.end[o.compute1] - r.start[o.compute1], kCompute_s, 1e-9);
}

// GPU 0 sends twice, one after the other, then computes: the second send
// restarts the interference, and its end must stop it again. (With SimGrid
// 3.32 a resumed execution could not be suspended again: compute after a
// GPU's second communication ran at (1 - share) for the rest of the run.)
TEST(ComputeInterference, ComputeAfterAGpusSecondCommunicationRunsAtFullSpeed) {
  TaskGraph graph;
  graph.gpu_count = 2;
  const TaskId first =
      graph.add({.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 0, .peer = 1, .bytes = S});
  const TaskId second =
      graph.add({.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 0, .peer = 1, .bytes = S});
  const TaskId compute = graph.add({.kind = TaskKind::forward, .gpu = 0, .duration_s = kCompute_s});
  graph.depend(first, second);
  graph.depend(second, compute);
  graph.seal();
  const auto r = replay_with(graph, 0.3);
  ASSERT_GT(r.start[compute], 0);
  EXPECT_NEAR(r.end[compute] - r.start[compute], kCompute_s, 1e-9);
}

TEST(ComputeInterference, OffByDefaultComputeKeepsItsDuration) {
  const Overlap o;
  const auto r = replay_with(o.graph, 0);
  EXPECT_DOUBLE_EQ(r.end[o.compute0], kCompute_s);
}

TEST(ComputeInterference, ACollectiveSlowsTheComputeOfEveryMember) {
  TaskGraph graph;
  graph.gpu_count = 2;
  graph.groups.push_back({0, 1});
  const TaskId all_reduce = graph.add({.kind = TaskKind::collective,
                                       .comm = workloads::CommKind::dp,
                                       .op = workloads::CollectiveOp::all_reduce,
                                       .group = 0,
                                       .bytes = S});
  std::vector<TaskId> computes;
  for (int gpu = 0; gpu < 2; ++gpu)
    computes.push_back(graph.add({.kind = TaskKind::forward, .gpu = gpu, .duration_s = kCompute_s}));
  const double share = 0.2;
  graph.seal();
  const auto r = replay_with(graph, share);
  const double collective_s = r.end[all_reduce];
  ASSERT_LT(collective_s, kCompute_s);
  for (TaskId c : computes)
    EXPECT_NEAR(r.end[c], kCompute_s + share * collective_s, 1e-9) << c;
}

}  // namespace
}  // namespace trainsim::sim
