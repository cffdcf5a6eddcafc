// The analyses on replayed iterations whose answers are analytic. One TEST
// = one simulation (SimGrid keeps one engine per process).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <simgrid/kernel/ProfileBuilder.hpp>

#include "analysis/bubbles.hpp"
#include "analysis/critical_path.hpp"
#include "analysis/gpu_power.hpp"
#include "analysis/memory.hpp"
#include "analysis/summary.hpp"
#include "analysis/utilization.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/simulation.hpp"
#include "support/test_cluster.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::sim {
namespace {

using analysis::BubbleCause;

constexpr double t_f = 1e-3, t_b = 2e-3;
// The gradient all-reduce of GPT-3 1.3B (2.6 GB) takes a few nanoseconds even
// on the 1 EB/s "free" network.
constexpr double kTolerance_s = 1e-8;

struct Replayed {
  workloads::ModelSpec model = *workloads::find_model_preset("gpt3-1.3b");
  workloads::ParallelPlan plan;
  platforms::ClusterSpec cluster;
  workloads::TaskGraph graph;
  analysis::Timeline timeline;

  // `slow_gpu` >= 0 runs at `speed` of its nominal speed from time 0 (a host
  // speed profile, SimGrid's way of modelling a straggler). `tied_embeddings`
  // false leaves out the first / last stage embedding all-reduce.
  Replayed(workloads::ParallelPlan p, platforms::ClusterSpec c, const workloads::CostModel& cost,
           int slow_gpu = -1, double speed = 1, bool tied_embeddings = true)
      : plan(p), cluster(std::move(c)) {
    model.tied_embeddings = tied_embeddings;
    graph = workloads::build_iteration(model, plan, cluster, cost);
    auto engine = make_engine();
    auto* zone = new ClusterZone(cluster);
    if (slow_gpu >= 0)
      zone->host(slow_gpu)->set_speed_profile(
          simgrid::kernel::profile::ProfileBuilder::from_string("slow", fmt::format("0 {}\n", speed), -1));
    timeline = replay(graph, *zone);
  }
};

double cause(const analysis::GpuBubbles& g, BubbleCause c) {
  return g.cause_s[static_cast<std::size_t>(c)];
}

// Uniform stages, free network: every GPU loses exactly (p - 1)(t_F + t_B),
// all of it to the schedule's warm-up and cool-down.
TEST(AnalysisEndToEnd, Uniform1F1BLosesTimeOnlyToWarmUpAndCoolDown) {
  const int p = 4, m = 8;
  Replayed r({.dp = 1, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m},
             testing::free_network_cluster(p), testing::FixedCostModel(t_f, t_b));
  const auto b = analysis::analyze_bubbles(r.graph, r.timeline, r.plan);
  const double expected = (p - 1) * (t_f + t_b);
  EXPECT_NEAR(b.reference_iteration_time_s, r.timeline.end_s, 1e-12);
  for (const auto& g : b.gpus) {
    SCOPED_TRACE(g.gpu);
    EXPECT_NEAR(g.lost_s, expected, 1e-9);
    EXPECT_NEAR(cause(g, BubbleCause::warmup_cooldown), expected, 1e-9);
    for (BubbleCause c : {BubbleCause::p2p_wait, BubbleCause::collective_wait, BubbleCause::straggler,
                          BubbleCause::dp_comm, BubbleCause::optimizer})
      EXPECT_NEAR(cause(g, c), 0, 1e-9) << to_string(c);
  }
  // The critical path is compute from end to end.
  const auto path = analysis::critical_path(r.graph, r.timeline);
  double compute = 0;
  for (const auto& blame : path.by_kind)
    if (blame.name.ends_with("compute"))
      compute += blame.seconds;
  EXPECT_NEAR(compute, (m + p - 1) * (t_f + t_b), 1e-9);
}

// Two data-parallel replicas, GPU 1 three times slower: GPU 0 computes
// m(t_F + t_B) and then waits 2m(t_F + t_B) for its peer, all of it
// straggler-caused and idle; the slow GPU itself shows no straggler time.
TEST(AnalysisEndToEnd, ASlowedGpusWaitShowsAsStragglerIdleOnItsPeer) {
  const int m = 4;
  auto cost = testing::FixedCostModel(t_f, t_b);
  cost.slow_by(3);
  Replayed r({.dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2 * m},
             testing::with_slowed_gpu(2, 1), cost);
  const auto b = analysis::analyze_bubbles(r.graph, r.timeline, r.plan);
  const double wait = 2 * m * (t_f + t_b);
  EXPECT_NEAR(r.timeline.end_s, 3 * m * (t_f + t_b), kTolerance_s);
  EXPECT_NEAR(b.reference_iteration_time_s, m * (t_f + t_b), kTolerance_s);
  EXPECT_NEAR(cause(b.gpus[0], BubbleCause::straggler), wait, kTolerance_s);
  EXPECT_NEAR(b.gpus[0].idle_part_s[static_cast<std::size_t>(BubbleCause::straggler)], wait, kTolerance_s);
  EXPECT_NEAR(cause(b.gpus[0], BubbleCause::warmup_cooldown), 0, kTolerance_s);
  EXPECT_NEAR(cause(b.gpus[1], BubbleCause::straggler), 0, kTolerance_s);
  EXPECT_NEAR(b.gpus[1].lost_s, 0, kTolerance_s);
}

// The same through SimGrid: GPU 1's host runs at a third of its speed (a
// speed profile, as perturbations slow a host); its ops keep their nominal
// durations in the graph and take three times longer.
TEST(AnalysisEndToEnd, AHostSlowedBySimGridShowsAsStragglerIdleOnItsPeer) {
  const int m = 4;
  Replayed r({.dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2 * m},
             testing::free_network_cluster(2), testing::FixedCostModel(t_f, t_b), 1, 1.0 / 3);
  const auto b = analysis::analyze_bubbles(r.graph, r.timeline, r.plan);
  EXPECT_NEAR(r.timeline.end_s, 3 * m * (t_f + t_b), kTolerance_s);
  EXPECT_NEAR(b.reference_iteration_time_s, m * (t_f + t_b), kTolerance_s);
  EXPECT_NEAR(cause(b.gpus[0], BubbleCause::straggler), 2 * m * (t_f + t_b), kTolerance_s);
  EXPECT_NEAR(cause(b.gpus[1], BubbleCause::straggler), 0, kTolerance_s);
}

// A 2-stage pipeline with 2 replicas where GPU 3 (stage 1, replica 1) runs
// at half speed: every other GPU waits, through the pipeline or the gradient
// all-reduce, for exactly the time the iteration lost to it.
TEST(AnalysisEndToEnd, AStragglerInAPipelineDelaysEveryPeerByTheTimeItCost) {
  const int p = 2, m = 4;
  auto cost = testing::FixedCostModel(t_f, t_b);
  cost.slow_by(2);
  Replayed r({.dp = 2, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = 2 * m},
             testing::with_slowed_gpu(4, 3), cost);
  const auto b = analysis::analyze_bubbles(r.graph, r.timeline, r.plan);
  EXPECT_NEAR(b.reference_iteration_time_s, (m + p - 1) * (t_f + t_b), kTolerance_s);
  const double cost_of_straggler = r.timeline.end_s - b.reference_iteration_time_s;
  EXPECT_GT(cost_of_straggler, m * (t_f + t_b) / 2);
  for (int g = 0; g < 3; ++g) {
    SCOPED_TRACE(g);
    EXPECT_NEAR(cause(b.gpus[static_cast<std::size_t>(g)], BubbleCause::straggler), cost_of_straggler,
                kTolerance_s);
  }
  EXPECT_NEAR(cause(b.gpus[3], BubbleCause::straggler), 0, kTolerance_s);
}

// 1F1B keeps min(p - s, m) micro-batches of activations on stage s: the
// replayed memory curve of a middle stage (no embedding or logits extras)
// rises to its resident bytes plus that many stage activations, and every
// activation is freed by the end.
TEST(AnalysisEndToEnd, PeakActivationsFollowTheScheduleInFlightCount) {
  const int p = 4, m = 8;
  Replayed r({.dp = 1, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m},
             testing::free_network_cluster(p), testing::FixedCostModel(t_f, t_b));
  const auto mem = analysis::memory_over_time(r.graph, r.timeline, r.cluster);
  const double per_micro_batch = workloads::stage_activation_bytes(r.model, r.plan, r.model.layers / p);
  for (int s = 0; s < p; ++s) {
    SCOPED_TRACE(s);
    const auto& g = mem.gpus[static_cast<std::size_t>(s)];
    EXPECT_DOUBLE_EQ(g.resident_bytes, r.graph.resident_memory[static_cast<std::size_t>(s)].total());
    EXPECT_DOUBLE_EQ(g.samples().back().bytes, g.resident_bytes);  // all freed by the end
    if (s > 0 && s < p - 1)
      EXPECT_NEAR(g.peak_bytes, g.resident_bytes + std::min(p - s, m) * per_micro_batch, 1.0);
    else
      EXPECT_GE(g.peak_bytes, g.resident_bytes + std::min(p - s, m) * per_micro_batch);
  }
}

// One 8.4 MB activation send from GPU 0 to GPU 1 on another node, 1 GB/s NICs
// with 10 us latency: the sender's NIC up link is busy lat + S/B. Untied, so
// that the one send is the link's only flow (a tied model's embedding
// all-reduce crosses the same NICs after the backward).
TEST(AnalysisEndToEnd, APipelineSendLoadsItsNicLinksForLatencyPlusSizeOverBandwidth) {
  const double bandwidth = 1e9, latency = 1e-5;
  Replayed r({.dp = 1, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 1},
             testing::uniform_cluster(2, 1, bandwidth, latency), testing::FixedCostModel(t_f, t_b),
             /*slow_gpu=*/-1, /*speed=*/1, /*tied_embeddings=*/false);
  const double bytes = workloads::pipeline_message_bytes(r.model, r.plan);
  const auto u = analysis::analyze_utilization(r.graph, r.timeline);
  const analysis::LinkUsage* up = nullptr;
  for (const auto& l : u.links)
    if (l.name == "node0-nic0_UP")
      up = &l;
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->flows, 1u);
  EXPECT_DOUBLE_EQ(up->bytes, bytes);
  EXPECT_NEAR(up->busy_s, latency + bytes / bandwidth, 1e-9);
  EXPECT_NEAR(up->busy_fraction, (latency + bytes / bandwidth) / r.timeline.end_s, 1e-9);
  EXPECT_EQ(up->peak_concurrent_flows, 1);
  EXPECT_NEAR(r.timeline.end_s, 2 * (t_f + t_b) + 2 * (latency + bytes / bandwidth), 1e-9);
}

// The replay's energy is the power model's over the first iteration: every
// GPU draws at least its idle power all iteration and at most its board
// limit, and its time is compute, transfers, waits in NCCL and idle.
TEST(AnalysisEndToEnd, EnergyIsThePowerModelsOverTheIteration) {
  const auto scenario = scenario::parse_scenario_text(R"(
cluster: {gpu: A100-80GB, nodes: 1, gpus_per_node: 4, nvlink: {bandwidth: 300GBps, latency: 2us},
          nic: {bandwidth: 200Gbps, latency: 5us}}
model: {preset: gpt3-125m}
plan: {dp: 2, tp: 1, pp: 2, micro_batch_size: 1, global_batch_size: 8}
)",
                                                      "energy.yaml");
  const auto result = simulate(scenario);
  ASSERT_EQ(result.timeline.gpu_energy_J.size(), 4u);
  const auto& gpu = scenario.cluster.gpu_of(0);
  const double t = result.timeline.end_s;
  const auto activity = analysis::gpu_activity(result.graph, result.timeline, scenario.cluster);
  for (std::size_t g = 0; g < 4; ++g) {
    const auto& a = activity[g];
    EXPECT_NEAR(a.compute_s, result.summary.gpus[g].compute_s, 1e-9 * t) << g;
    EXPECT_NEAR(a.compute_s + a.communication_s + a.waiting_s + a.idle_s, t, 1e-9 * t) << g;
    // Stage 1 waits for stage 0's first activations in NCCL's receive.
    if (g >= 2) {
      EXPECT_GT(a.waiting_s, 0) << g;
    }
    EXPECT_DOUBLE_EQ(result.timeline.gpu_energy_J[g], a.energy_J) << g;
    EXPECT_GT(a.energy_J, gpu.idle_power_W * t) << g;
    EXPECT_LT(a.energy_J, gpu.max_power_W * t) << g;
  }
}

}  // namespace
}  // namespace trainsim::sim
