// The replay starts finished SimGrid activities again instead of creating
// new ones (sim/replay/replay.cpp says why): a restarted communication or
// kernel must take exactly as long as a new one would. Each TEST is one
// simulation.
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

constexpr double B = 25e9, a = 5e-6, S = 64e6;

// Two GPUs on two nodes: every send from 0 to 1 crosses the same links.
platforms::ClusterSpec two_nodes() {
  return testing::uniform_cluster(2, 1, B, a);
}

TaskId send(TaskGraph& graph, double bytes = S) {
  return graph.add(
      {.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 0, .peer = 1, .bytes = bytes});
}

std::vector<double> end_times(const TaskGraph& graph, const platforms::ClusterSpec& cluster) {
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  std::vector<double> end(graph.size(), -1);
  for (const auto& r : timeline.records)
    end[r.task] = r.end_s;
  return end;
}

TEST(ActivityReuse, BackToBackSendsOnOnePairEachTakeTheTimeOfTheFirst) {
  // Each send starts in the completion callback of the previous one, whose
  // communication cannot be restarted yet: the pair alternates two.
  TaskGraph graph;
  graph.gpu_count = 2;
  std::vector<TaskId> chain;
  for (int i = 0; i < 10; ++i) {
    chain.push_back(send(graph));
    if (i > 0)
      graph.depend(chain[i - 1], chain[i]);
  }
  graph.seal();
  const auto end = end_times(graph, two_nodes());
  const double first = end[chain[0]];
  EXPECT_GT(first, S / B);
  for (std::size_t i = 1; i < chain.size(); ++i)
    EXPECT_NEAR(end[chain[i]] - end[chain[i - 1]], first, 1e-12 * end[chain[i]]) << "send " << i;
}

TEST(ActivityReuse, WavesOfConcurrentSendsOnOnePairRepeatTheFirstWave) {
  // Four flows share the pair's links at once; each later wave restarts the
  // communications of the one before.
  TaskGraph graph;
  graph.gpu_count = 2;
  std::vector<std::vector<TaskId>> waves(3);
  for (std::size_t w = 0; w < waves.size(); ++w)
    for (int i = 0; i < 4; ++i) {
      waves[w].push_back(send(graph, S * (1 + i)));
      if (w > 0)
        for (TaskId before : waves[w - 1])
          graph.depend(before, waves[w].back());
    }
  graph.seal();
  const auto end = end_times(graph, two_nodes());
  const double wave = end[waves[0].back()];
  for (std::size_t w = 1; w < waves.size(); ++w)
    for (std::size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(end[waves[w][i]] - end[waves[w - 1].back()], end[waves[0][i]], 1e-12 * wave * (w + 1))
          << "wave " << w << " send " << i;
}

TEST(ActivityReuse, BackToBackKernelsOnOneGpuAddUp) {
  TaskGraph graph;
  graph.gpu_count = 2;
  std::vector<TaskId> chain;
  double sum = 0;
  for (int i = 0; i < 12; ++i) {
    const double duration = 1e-3 * (1 + i % 5);
    sum += duration;
    chain.push_back(graph.add({.kind = TaskKind::forward, .gpu = 0, .duration_s = duration}));
    if (i > 0)
      graph.depend(chain[i - 1], chain[i]);
  }
  graph.seal();
  const auto end = end_times(graph, two_nodes());
  EXPECT_NEAR(end[chain.back()], sum, 1e-12);
}

}  // namespace
}  // namespace trainsim::sim
