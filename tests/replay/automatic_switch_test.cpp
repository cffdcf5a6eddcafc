// The automatic collective representation switching both ways on one ring
// (docs/collectives.md, "Fidelity"): a pipeline-like send on the ring's
// first NIC makes it start as SimGrid flows (`shared`); once the send is
// gone the ring goes on computed alone (`shared_then_isolated`); a later
// send on another of its NICs displaces it again (`isolated_then_shared`),
// its machine resumed from where it went alone. Every task must end when
// the detailed flows say. SimGrid runs one engine per process: each replay
// runs in a child process and hands its task ends back through a pipe.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using platforms::Fidelity;
using workloads::TaskKind;

// 8 nodes of one GPU: a ring all-reduce over all of them is 14 steps of 8
// flows, each step S/8 through every NIC.
constexpr double B = 25e9, a = 5e-6, S = 512e6;

struct Ends {
  double ring = 0, first_send = 0, second_send = 0;
  analysis::Representation representation = analysis::Representation::flows;
  Fidelity ring_fidelity = Fidelity::automatic;  // what the ring's choice records
  int ring_flows = 0;                            // flows recorded for the ring
};

// The ring, with a 10 MB send from GPU 0 at the start (it shares GPU 0's
// NIC with the ring's first step) and, when `second_send`, a 200 MB send
// from GPU 2 once a 25 ms compute task on GPU 7 has ended (mid-ring, after
// the ring went alone). `flow_limit`: collectives.detailed_flow_limit;
// without `first_send` the ring starts alone.
Ends replay_ring(Fidelity fidelity, bool second_send, std::int64_t flow_limit = 0, bool first_send = true) {
  auto cluster = testing::uniform_cluster(8, 1, B, a);
  cluster.collectives.fidelity = fidelity;
  cluster.collectives.detailed_flow_limit = flow_limit;
  workloads::TaskGraph graph;
  graph.gpu_count = cluster.gpu_count();
  const int all = graph.add_group({0, 1, 2, 3, 4, 5, 6, 7});
  // The send first: sources start in task order, and a ring that started
  // alone would be displaced by it instead (and stay as flows).
  const auto first = graph.add({.kind = TaskKind::send,
                                .comm = workloads::CommKind::pp,
                                .gpu = 0,
                                .peer = 4,
                                .bytes = first_send ? 10e6 : 0.0});
  const auto ring = graph.add({.kind = TaskKind::collective,
                               .comm = workloads::CommKind::dp,
                               .op = workloads::CollectiveOp::all_reduce,
                               .algorithm = platforms::CollectiveAlgorithm::ring,
                               .group = all,
                               .bytes = S});
  auto second = ring;
  if (second_send) {
    const auto wait = graph.add({.kind = TaskKind::forward, .gpu = 7, .duration_s = 25e-3});
    second = graph.add(
        {.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 2, .peer = 6, .bytes = 200e6});
    graph.depend(wait, second);
  }
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  graph.seal();
  const auto timeline = replay(graph, *zone);
  Ends ends;
  for (const auto& r : timeline.records) {
    if (r.task == ring)
      ends.ring = r.end_s;
    if (r.task == first)
      ends.first_send = r.end_s;
    if (second_send && r.task == second)
      ends.second_send = r.end_s;
  }
  ends.representation = timeline.collective_choice(ring)->representation;
  ends.ring_fidelity = timeline.collective_choice(ring)->fidelity;
  for (const auto& flow : timeline.flows)
    ends.ring_flows += flow.task == ring ? 1 : 0;
  return ends;
}

// Runs `replay_ring` in a child process (its own SimGrid engine).
Ends in_child(const std::function<Ends()>& run) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const Ends ends = run();
    const auto written = write(fds[1], &ends, sizeof ends);
    _exit(written == static_cast<ssize_t>(sizeof ends) ? 0 : 1);
  }
  close(fds[1]);
  Ends ends;
  const auto got = read(fds[0], &ends, sizeof ends);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(got, static_cast<ssize_t>(sizeof ends));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return ends;
}

void expect_same_ends(const Ends& detailed, const Ends& automatic) {
  // The flows in flight when the ring went alone are dated from the bytes
  // SimGrid reports left: equal to SimGrid's own ends up to rounding.
  EXPECT_NEAR(automatic.ring, detailed.ring, 1e-9 * detailed.ring);
  EXPECT_NEAR(automatic.first_send, detailed.first_send, 1e-9 * detailed.first_send);
  EXPECT_NEAR(automatic.second_send, detailed.second_send, 1e-9 * std::max(detailed.second_send, 1e-3));
}

TEST(AutomaticSwitch, ARingSharedAtItsStartGoesAloneOnceTheSendHasLeftItsNic) {
  const auto detailed = in_child([] { return replay_ring(Fidelity::detailed, false); });
  const auto automatic = in_child([] { return replay_ring(Fidelity::automatic, false); });
  ASSERT_GT(detailed.ring, 14 * S / 8 / B);  // the ring ran, and longer than alone
  EXPECT_EQ(automatic.representation, analysis::Representation::shared_then_isolated);
  expect_same_ends(detailed, automatic);
}

TEST(AutomaticSwitch, ARingThatWentAloneIsDisplacedByALaterSendAndStillEndsAsTheDetailedFlows) {
  const auto detailed = in_child([] { return replay_ring(Fidelity::detailed, true); });
  const auto automatic = in_child([] { return replay_ring(Fidelity::automatic, true); });
  // The second send starts after the ring went alone (25 ms in; the first
  // send ends within a millisecond) and before the ring ends.
  EXPECT_LT(automatic.first_send, 25e-3);
  ASSERT_GT(detailed.ring, 25e-3);
  // It started as flows (the first test): this label needs it to have gone
  // alone in between.
  EXPECT_EQ(automatic.representation, analysis::Representation::isolated_then_shared);
  expect_same_ends(detailed, automatic);
}

// collectives.detailed_flow_limit: the ring's step-by-step form is 14 steps
// x 8 flows = 112 flows.
constexpr std::int64_t kRingFlows = 14 * 8;

TEST(DetailedFlowLimit, ASharedRingOfMoreFlowsThanTheLimitRunsItsFastFormAndSaysSo) {
  const auto fast = in_child([] { return replay_ring(Fidelity::fast, false); });
  const auto limited = in_child([] { return replay_ring(Fidelity::automatic, false, kRingFlows - 1); });
  EXPECT_EQ(limited.ring_fidelity, Fidelity::fast);
  EXPECT_EQ(limited.representation, analysis::Representation::shared);
  // The same flows as the fast fidelity's, sharing the send's NIC the same way.
  EXPECT_DOUBLE_EQ(limited.ring, fast.ring);
  EXPECT_DOUBLE_EQ(limited.first_send, fast.first_send);
  // One flow per ring edge, not one per step and edge.
  EXPECT_EQ(limited.ring_flows, 8);
  EXPECT_EQ(fast.ring_flows, 8);
}

TEST(DetailedFlowLimit, ARingAtTheLimitStillRunsStepByStep) {
  const auto detailed = in_child([] { return replay_ring(Fidelity::detailed, false); });
  const auto at_limit = in_child([] { return replay_ring(Fidelity::automatic, false, kRingFlows); });
  EXPECT_EQ(at_limit.ring_fidelity, Fidelity::automatic);
  EXPECT_EQ(at_limit.representation, analysis::Representation::shared_then_isolated);
  EXPECT_EQ(at_limit.ring_flows, kRingFlows);
  expect_same_ends(detailed, at_limit);
}

TEST(DetailedFlowLimit, ARingComputedAloneIgnoresTheLimit) {
  // Nothing shares its links: computed alone, exact, whatever its size.
  const auto detailed = in_child([] { return replay_ring(Fidelity::detailed, false, 0, false); });
  const auto limited = in_child([] { return replay_ring(Fidelity::automatic, false, 1, false); });
  EXPECT_EQ(limited.ring_fidelity, Fidelity::automatic);
  EXPECT_EQ(limited.representation, analysis::Representation::isolated);
  EXPECT_NEAR(limited.ring, detailed.ring, 1e-12 * detailed.ring);
}

}  // namespace
}  // namespace trainsim::sim
