// Perturbations replayed by SimGrid: slowed GPUs, windows, stragglers and
// link faults change the simulated times exactly as the closed forms say.
// Each TEST is one simulation (its own process).
#include <gtest/gtest.h>

#include <optional>

#include "analysis/summary.hpp"
#include "sim/perturbations/driver.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::sim {
namespace {

using workloads::ScheduleKind;

constexpr double kForward = 1e-3, kBackward = 2e-3;

struct Run {
  ReplayResult result;
  PerturbationStats stats;
};

Run replay_with(const workloads::TaskGraph& graph, const platforms::ClusterSpec& cluster,
                const scenario::Perturbations& p, int iterations = 1, std::uint64_t seed = 1) {
  auto engine = make_engine();
  const auto speeds = plan_gpu_speeds(p, cluster.gpu_count(), iterations, seed);
  auto* zone = new ClusterZone(cluster, speeds.pstate_factors);
  PerturbationDriver driver(p, speeds, *zone);
  ReplayOptions options;
  options.iterations = iterations;
  options.perturbations = &driver;
  Run run{replay(graph, *zone, options), {}};
  run.stats = driver.stats();
  return run;
}

// A p-stage pipeline (one GPU per stage, free network, fixed op costs).
workloads::TaskGraph pipeline(const platforms::ClusterSpec& cluster, int p, int m, int dp = 1,
                              ScheduleKind schedule = ScheduleKind::one_f_one_b) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 24;
  // Untied: the closed forms below are the stages' compute alone; a tied
  // model adds the first / last stage embedding all-reduce (even on a free
  // network its collective's latency) before the optimizer steps.
  model.tied_embeddings = false;
  workloads::ParallelPlan plan{
      .dp = dp, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m * dp};
  plan.schedule = schedule;
  return workloads::build_iteration(model, plan, cluster, testing::FixedCostModel(kForward, kBackward));
}

// SimGrid's solver works to about 1e-11 s here.
constexpr double kTolerance_s = 1e-9;

// With free communication, GPipe's forward and backward phases are each a
// flow shop of m identical jobs: sum of the stage times plus (m - 1) times
// the slowest stage's. One stage at speed s takes (t_F + t_B) / s per
// micro-batch, wherever it sits. In 1F1B the last stage runs every
// micro-batch's forward and backward back to back, so slowing it gives the
// same (p - 1) (t_F + t_B) + m (t_F + t_B) / s.
double slowed_pipeline_s(int p, int m, double speed) {
  const double stage = kForward + kBackward;
  return (p - 1) * stage + m * stage / speed;
}

class SlowStage : public ::testing::TestWithParam<int> {};

TEST_P(SlowStage, OneSlowGpuInGPipeGivesTheFlowShopTimeWhereverItSits) {
  const int p = 4, m = 8, stage = GetParam();
  const auto cluster = testing::free_network_cluster(p);
  scenario::Perturbations perturbations;
  perturbations.slow_gpus.push_back({.gpus = {stage}, .speed = 0.8, .window = {}});
  const auto run = replay_with(pipeline(cluster, p, m, 1, ScheduleKind::gpipe), cluster, perturbations);
  EXPECT_NEAR(run.result.timeline.end_s, slowed_pipeline_s(p, m, 0.8), kTolerance_s);
}

INSTANTIATE_TEST_SUITE_P(Stages, SlowStage, ::testing::Values(0, 1, 2, 3));

TEST(SlowStage, ASlowLastStageIn1F1BAddsItsExtraTimeForEveryMicroBatch) {
  const int p = 4, m = 8;
  const auto cluster = testing::free_network_cluster(p);
  scenario::Perturbations perturbations;
  perturbations.slow_gpus.push_back({.gpus = {p - 1}, .speed = 0.8, .window = {}});
  const auto run = replay_with(pipeline(cluster, p, m), cluster, perturbations);
  EXPECT_NEAR(run.result.timeline.end_s, slowed_pipeline_s(p, m, 0.8), kTolerance_s);
}

TEST(SlowStage, SlowingEveryGpuScalesTheIteration) {
  const int p = 4, m = 8;
  const auto cluster = testing::free_network_cluster(p);
  scenario::Perturbations perturbations;
  perturbations.slow_gpus.push_back({.gpus = {0, 1, 2, 3}, .speed = 0.8, .window = {}});
  const auto run = replay_with(pipeline(cluster, p, m), cluster, perturbations);
  EXPECT_NEAR(run.result.timeline.end_s, (m + p - 1) * (kForward + kBackward) / 0.8, kTolerance_s);
}

TEST(SlowStage, ASlowReplicaHoldsBackEveryDataParallelReplica) {
  // dp = 2: ranks 0..1 are stage 0, 2..3 stage 1; slowing rank 2 slows the
  // whole iteration because the replicas' gradient all-reduce waits for it.
  const int p = 2, m = 4;
  const auto cluster = testing::free_network_cluster(p * 2);
  scenario::Perturbations perturbations;
  perturbations.slow_gpus.push_back({.gpus = {2}, .speed = 0.5, .window = {}});
  const auto run = replay_with(pipeline(cluster, p, m, 2), cluster, perturbations);
  // (The gradient all-reduce moves gigabytes over the 1 EB/s network: ns.)
  EXPECT_NEAR(run.result.timeline.end_s, slowed_pipeline_s(p, m, 0.5), 1e-8);
}

TEST(SlowWindow, AStragglerWhileItsGpuIdlesCostsNothing) {
  // The last stage waits (p - 1) t_F for its first micro-batch: slowing it
  // only before then is off the critical path.
  const int p = 4, m = 8;
  const auto cluster = testing::free_network_cluster(p);
  scenario::Perturbations perturbations;
  perturbations.slow_gpus.push_back(
      {.gpus = {p - 1}, .speed = 0.25, .window = {.from_s = 0, .until_s = 0.99 * (p - 1) * kForward}});
  const auto run = replay_with(pipeline(cluster, p, m), cluster, perturbations);
  const double baseline = (m + p - 1) * (kForward + kBackward);
  EXPECT_NEAR(run.result.timeline.end_s, baseline, kTolerance_s);
}

TEST(SlowWindow, AWindowOnTheCriticalPathCostsItsLostWork) {
  // Stage 0's first forward runs from 0 to t_F; at speed 1/2 over the window
  // [0, t_F) it does half a forward, so everything after shifts by t_F / 2.
  const int p = 2, m = 1;
  const auto cluster = testing::free_network_cluster(p);
  scenario::Perturbations perturbations;
  perturbations.slow_gpus.push_back(
      {.gpus = {0}, .speed = 0.5, .window = {.from_s = 0, .until_s = kForward}});
  const auto run = replay_with(pipeline(cluster, p, m), cluster, perturbations);
  const double expected = (m + p - 1) * (kForward + kBackward) + kForward / 2;
  EXPECT_NEAR(run.result.timeline.end_s, expected, kTolerance_s);
}

TEST(Throttling, AProfileOfSpeedsStretchesComputeStepByStep) {
  // One GPU, one stage: forward then backward (3 ms of work at full speed).
  // Full speed for 1 ms, then half speed: 1 ms + 2 x 2 ms = 5 ms.
  const auto cluster = testing::free_network_cluster(1);
  scenario::Perturbations perturbations;
  perturbations.throttling.push_back({.gpus = {0}, .points = {{0, 1.0}, {1e-3, 0.5}}});
  const auto run = replay_with(pipeline(cluster, 1, 1), cluster, perturbations);
  EXPECT_NEAR(run.result.timeline.end_s, 5e-3, kTolerance_s);
}

// Two transfers side by side on a 4-node switch: 0 -> 1 and 2 -> 3.
constexpr double kB = 25e9, kA = 5e-6, kS = 256e6;

workloads::TaskGraph two_sends(const platforms::ClusterSpec& cluster, workloads::TaskId& first,
                               workloads::TaskId& second) {
  workloads::TaskGraph graph;
  graph.gpu_count = cluster.gpu_count();
  first = graph.add({.kind = workloads::TaskKind::send, .gpu = 0, .peer = 1, .bytes = kS});
  second = graph.add({.kind = workloads::TaskKind::send, .gpu = 2, .peer = 3, .bytes = kS});
  graph.seal();
  return graph;
}

scenario::LinkFault fault_on(const std::string& link) {
  scenario::LinkFault f;
  f.links = {link};
  return f;
}

double end_of(const analysis::Timeline& timeline, workloads::TaskId task) {
  for (const auto& r : timeline.records)
    if (r.task == task)
      return r.end_s;
  return -1;
}

TEST(LinkFaults, ADegradedNicSlowsExactlyTheFlowsCrossingIt) {
  const auto cluster = testing::uniform_cluster(4, 1, kB, kA);
  workloads::TaskId a = 0, b = 0;
  const auto graph = two_sends(cluster, a, b);
  scenario::Perturbations perturbations;
  auto fault = fault_on("node0-nic0");
  fault.bandwidth_factor = 0.5;
  perturbations.links.push_back(fault);
  const auto run = replay_with(graph, cluster, perturbations);
  EXPECT_NEAR(end_of(run.result.timeline, a), kA + kS / (kB / 2), 1e-9);
  EXPECT_NEAR(end_of(run.result.timeline, b), kA + kS / kB, 1e-9);
}

TEST(LinkFaults, AddedLatencyDelaysOnlyTheRoutesThroughTheLink) {
  const auto cluster = testing::uniform_cluster(4, 1, kB, kA);
  workloads::TaskId a = 0, b = 0;
  const auto graph = two_sends(cluster, a, b);
  scenario::Perturbations perturbations;
  auto fault = fault_on("node3-nic0");
  fault.added_latency_s = 1e-3;
  perturbations.links.push_back(fault);
  const auto run = replay_with(graph, cluster, perturbations);
  EXPECT_NEAR(end_of(run.result.timeline, a), kA + kS / kB, 1e-9);
  EXPECT_NEAR(end_of(run.result.timeline, b), kA + 1e-3 + kS / kB, 1e-9);
}

TEST(LinkFaults, ALinkDownStallsItsFlowsUntilItComesBack) {
  // node1-nic0 is down for [2 ms, 7 ms): the flow 0 -> 1 stops after 2 ms
  // and its remaining bytes resume at 7 ms (a new transfer: latency again).
  const auto cluster = testing::uniform_cluster(4, 1, kB, kA);
  workloads::TaskId a = 0, b = 0;
  const auto graph = two_sends(cluster, a, b);
  scenario::Perturbations perturbations;
  auto fault = fault_on("node1-nic0");
  fault.down = true;
  fault.window = {2e-3, 7e-3};
  perturbations.links.push_back(fault);
  const auto run = replay_with(graph, cluster, perturbations);
  const double sent_by_2ms = (2e-3 - kA) * kB;
  EXPECT_NEAR(end_of(run.result.timeline, a), 7e-3 + kA + (kS - sent_by_2ms) / kB, 1e-6);
  EXPECT_NEAR(end_of(run.result.timeline, b), kA + kS / kB, 1e-9);
  EXPECT_EQ(run.stats.stalled_flows, 1);
}

TEST(LinkFaults, AFatTreeUplinkDownLosesOneOfItsUplinksInsteadOfStalling) {
  // 2 nodes per leaf, full bisection: leaf0's uplink is 2 x 25 GB/s; with
  // one of its 4 physical uplinks down, 3/4 of that: still above one NIC, so
  // a single flow across leaves is not slowed, and nothing stalls.
  auto cluster = testing::uniform_cluster(4, 1, kB, kA);
  cluster.fabric.topology = platforms::FabricTopology::fat_tree;
  cluster.fabric.nodes_per_leaf = 2;
  workloads::TaskGraph graph;
  graph.gpu_count = 4;
  const auto t = graph.add({.kind = workloads::TaskKind::send, .gpu = 0, .peer = 2, .bytes = kS});
  scenario::Perturbations perturbations;
  auto fault = fault_on("leaf0-uplink");
  fault.down = true;
  fault.uplinks = 4;
  perturbations.links.push_back(fault);
  graph.seal();
  const auto run = replay_with(graph, cluster, perturbations);
  EXPECT_NEAR(end_of(run.result.timeline, t), kA + kS / kB, 1e-9);
  EXPECT_EQ(run.stats.stalled_flows, 0);
  EXPECT_EQ(run.stats.rerouted_downs, 1);
}

TEST(LinkFaults, AFlappingLinkIsDegradedForItsDutyOfEveryPeriod) {
  // From 1 ms on, half bandwidth for the first half of every 2 ms period. A
  // transfer needing 10 ms at full speed moves 1 ms worth before the window
  // and 1.5 ms worth per period after it: 1 + 6 x 1.5 = 10 at 13 ms. (It
  // starts healthy: SimGrid bounds a flow by its route's bandwidth when it
  // starts, see docs/perturbations.md.)
  const auto cluster = testing::uniform_cluster(4, 1, kB, kA);
  workloads::TaskGraph graph;
  graph.gpu_count = 4;
  const double bytes = 10e-3 * kB;
  const auto t = graph.add({.kind = workloads::TaskKind::send, .gpu = 0, .peer = 1, .bytes = bytes});
  scenario::Perturbations perturbations;
  auto fault = fault_on("node0-nic0");
  fault.bandwidth_factor = 0.5;
  fault.window = {1e-3, scenario::kForever};
  fault.period_s = 2e-3;
  fault.duty = 0.5;
  perturbations.links.push_back(fault);
  graph.seal();
  const auto run = replay_with(graph, cluster, perturbations);
  // The latency kA delays the flow's start: at 13 ms kA worth is left, in a
  // degraded half period: 2 kA more.
  EXPECT_NEAR(end_of(run.result.timeline, t), 13e-3 + 2 * kA, 1e-9);
}

TEST(Stragglers, ASeedGivesTheSameEpisodesAndAnotherSeedOthers) {
  scenario::Perturbations p;
  p.stragglers = {
      .enabled = true,
      .probability = 0.3,
      .speed = {.kind = scenario::Distribution::Kind::lognormal, .a = 0.6, .b = 0.3, .min = 1e-3, .max = 1},
      .duration_s = {.kind = scenario::Distribution::Kind::uniform, .a = 1e-3, .b = 5e-3},
      .gpus = {0, 1, 2, 3, 4, 5, 6, 7}};
  const auto a = plan_gpu_speeds(p, 8, 20, 7);
  const auto b = plan_gpu_speeds(p, 8, 20, 7);
  const auto c = plan_gpu_speeds(p, 8, 20, 8);
  ASSERT_FALSE(a.draws.empty());
  ASSERT_EQ(a.draws.size(), b.draws.size());
  for (std::size_t i = 0; i < a.draws.size(); ++i) {
    EXPECT_EQ(a.draws[i].gpu, b.draws[i].gpu);
    EXPECT_EQ(a.draws[i].speed, b.draws[i].speed);
    EXPECT_EQ(a.draws[i].duration_s, b.draws[i].duration_s);
  }
  bool differ = a.draws.size() != c.draws.size();
  for (std::size_t i = 0; !differ && i < a.draws.size(); ++i)
    differ = a.draws[i].speed != c.draws[i].speed || a.draws[i].gpu != c.draws[i].gpu;
  EXPECT_TRUE(differ);
  // Roughly 30% of the 160 GPU-iterations, speeds within bounds.
  EXPECT_GT(a.draws.size(), 30u);
  EXPECT_LT(a.draws.size(), 70u);
  for (const auto& d : a.draws) {
    EXPECT_GT(d.speed, 0);
    EXPECT_LE(d.speed, 1);
    EXPECT_GE(d.duration_s, 1e-3);
    EXPECT_LE(d.duration_s, 5e-3);
  }
}

TEST(Stragglers, ACertainStragglerSlowsEveryIterationItCovers) {
  // Probability 1, speed 0.5 for longer than the run: iteration 0 (and so
  // every later one, since an episode in progress is not redrawn) runs its
  // only stage at half speed.
  const auto cluster = testing::free_network_cluster(1);
  scenario::Perturbations p;
  p.stragglers = {.enabled = true,
                  .probability = 1,
                  .speed = {.kind = scenario::Distribution::Kind::fixed, .a = 0.5, .min = 1e-3, .max = 1},
                  .duration_s = {.kind = scenario::Distribution::Kind::fixed, .a = 1.0},
                  .gpus = {0}};
  const auto run = replay_with(pipeline(cluster, 1, 2), cluster, p, 3);
  ASSERT_EQ(run.result.iteration_end_s.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(run.result.iteration_end_s[i] - run.result.iteration_start_s[i], 2 * 2 * 3e-3, kTolerance_s);
  EXPECT_EQ(run.stats.straggler_episodes, 1);
}

TEST(Iterations, IterationsFollowEachOtherWithoutPerturbations) {
  const int p = 4, m = 8;
  const auto cluster = testing::free_network_cluster(p);
  const auto run = replay_with(pipeline(cluster, p, m), cluster, scenario::Perturbations{}, 5);
  const double one = (m + p - 1) * (kForward + kBackward);
  ASSERT_EQ(run.result.iteration_end_s.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(run.result.iteration_start_s[i], i * one, 1e-9);
    EXPECT_NEAR(run.result.iteration_end_s[i], (i + 1) * one, 1e-9);
  }
  EXPECT_NEAR(run.result.timeline.end_s, one, 1e-9);
}

}  // namespace
}  // namespace trainsim::sim
