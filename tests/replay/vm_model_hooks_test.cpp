// The replay unhooks SimGrid's virtual-machine model from every activity's
// start and completion (sim/replay/vm_model_hooks.hpp): only when those
// callbacks are all the signals hold, and the replay's times stay what they
// were. Each TEST is one simulation.
#include <gtest/gtest.h>

#include <simgrid/s4u/Activity.hpp>

#include <vector>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/vm_model_hooks.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

// On GPU 0 kernels of 1, 2 and 3 ms, a send to GPU 1 between each two; on
// GPU 1 a kernel of 4 ms after the second send: 6 activities.
struct Chain {
  TaskGraph graph;
  TaskId k0, s0, k1, s1, k2, g1;
  Chain() {
    graph.gpu_count = 2;
    const auto kernel = [this](int gpu, double duration_s) {
      return graph.add({.kind = TaskKind::forward, .gpu = gpu, .duration_s = duration_s});
    };
    const auto send = [this]() {
      return graph.add(
          {.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 0, .peer = 1, .bytes = 1e6});
    };
    k0 = kernel(0, 1e-3);
    s0 = send();
    k1 = kernel(0, 2e-3);
    s1 = send();
    k2 = kernel(0, 3e-3);
    g1 = kernel(1, 4e-3);
    graph.depend(k0, s0);
    graph.depend(s0, k1);
    graph.depend(k1, s1);
    graph.depend(s1, k2);
    graph.depend(s1, g1);
    graph.seal();
  }
};

platforms::ClusterSpec two_nodes() {
  return testing::uniform_cluster(2, 1, 25e9, 5e-6);
}

std::vector<double> end_times(const analysis::Timeline& timeline, std::size_t tasks) {
  std::vector<double> end(tasks, -1);
  for (const auto& r : timeline.records)
    end[r.task] = r.end_s;
  return end;
}

TEST(VmModelHooks, ComeOffAFreshEngineOnceAndTheKernelsKeepTheirTimes) {
  const auto cluster = two_nodes();  // the zone keeps a reference
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  EXPECT_TRUE(unhook_vm_model_from_activities());
  EXPECT_FALSE(unhook_vm_model_from_activities());  // nothing left to unhook
  const Chain chain;
  const auto end = end_times(replay(chain.graph, *zone), chain.graph.size());
  // Each send takes the same time on the idle pair; the kernels take theirs.
  const double send = end[chain.s0] - end[chain.k0];
  EXPECT_DOUBLE_EQ(end[chain.k0], 1e-3);
  EXPECT_GT(send, 0);
  EXPECT_NEAR(end[chain.k1], 3e-3 + send, 1e-15);
  EXPECT_NEAR(end[chain.s1] - end[chain.k1], send, 1e-15);
  EXPECT_NEAR(end[chain.k2], end[chain.s1] + 3e-3, 1e-15);
  EXPECT_NEAR(end[chain.g1], end[chain.s1] + 4e-3, 1e-15);
}

TEST(VmModelHooks, StayWhenAnotherCallbackHearsCompletions) {
  const auto cluster = two_nodes();  // the zone keeps a reference
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  int completions = 0;
  simgrid::s4u::Activity::on_completion_cb([&completions](const simgrid::s4u::Activity&) { ++completions; });
  EXPECT_FALSE(unhook_vm_model_from_activities());
  const Chain chain;
  replay(chain.graph, *zone);
  EXPECT_EQ(completions, 6);  // 4 kernels and 2 sends: the replay kept this callback
}

}  // namespace
}  // namespace trainsim::sim
