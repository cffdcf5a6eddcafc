#include <gtest/gtest.h>

#include "analysis/energy.hpp"
#include "analysis/gpu_power.hpp"
#include "analysis/memory.hpp"
#include "analysis/memory_curve.hpp"
#include "analysis/report.hpp"
#include "support/hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

using testing::Stream;
using workloads::TaskKind;

TEST(Memory, StepFunctionAndPeakFollowAllocationsAndFrees) {
  workloads::TaskGraph graph;
  graph.gpu_count = 1;
  const auto f0 = graph.add({.kind = TaskKind::forward, .gpu = 0, .micro_batch = 0});
  const auto f1 = graph.add({.kind = TaskKind::forward, .gpu = 0, .micro_batch = 1});
  const auto b0 = graph.add({.kind = TaskKind::backward, .gpu = 0, .micro_batch = 0});
  const auto b1 = graph.add({.kind = TaskKind::backward, .gpu = 0, .micro_batch = 1});
  Timeline t;
  t.end_s = 6;
  t.records = {{f0, 0, Stream::compute, 0, 1},
               {f1, 0, Stream::compute, 1, 2},
               {b0, 0, Stream::compute, 2, 4},
               {b1, 0, Stream::compute, 4, 6}};
  // Each forward keeps 10 bytes until its backward ends; 100 bytes resident.
  graph.resident_memory.resize(1);
  graph.resident_memory[0][workloads::MemoryKind::weights] = 100;
  using At = workloads::MemoryEvent::At;
  for (auto [f, b] : {std::pair{f0, b0}, std::pair{f1, b1}}) {
    graph.add_memory(f, 0, At::start, workloads::MemoryKind::activations, 10);
    graph.add_memory(b, 0, At::end, workloads::MemoryKind::activations, -10);
  }
  graph.seal();
  const auto cluster = testing::uniform_cluster(1, 1, 1e9, 0);
  const auto m = memory_over_time(graph, t, cluster);
  ASSERT_EQ(m.gpus.size(), 1u);
  const auto& g = m.gpus[0];
  EXPECT_DOUBLE_EQ(g.resident_bytes, 100);
  EXPECT_DOUBLE_EQ(g.peak_bytes, 120);
  EXPECT_DOUBLE_EQ(g.peak_time_s, 1);
  ASSERT_EQ(g.samples().size(), 4u);
  EXPECT_DOUBLE_EQ(g.samples()[0].bytes, 110);  // F0 allocates at time 0
  EXPECT_DOUBLE_EQ(g.samples()[1].bytes, 120);
  EXPECT_DOUBLE_EQ(g.samples()[2].time_s, 4);
  EXPECT_DOUBLE_EQ(g.samples()[3].bytes, 100);
  EXPECT_DOUBLE_EQ(g.capacity_bytes, 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(m.peak_gpu, 0);
}

// GPU 0 computes 3.5 s of 8.5 (forward, backward, its optimizer step),
// runs NCCL alone for 2 s (its send to GPU 1, then GPU 1's send to it) and
// waits 3 s in NCCL's receive for GPU 1's send [2, 5); GPU 1 waits 1 s in
// the receive of GPU 0's send [0, 1), computes 3.5 s, runs NCCL alone for
// 1.5 s (it receives from 1 to 2 s, and its send from 5 to 6 s overlaps its
// optimizer step until 5.5 s) and, done, idles 2.5 s until the iteration
// ends. The optimizer steps are HBM-bound.
TEST(GpuPower, EachSpanDrawsThePowerOfWhatTheGpuRuns) {
  testing::TwoStagePipeline h;
  h.graph[h.opt0].memory_bound_fraction = 1;
  h.graph[h.opt1].memory_bound_fraction = 1;
  const auto a = gpu_activity(h.graph, h.timeline, h.cluster);
  ASSERT_EQ(a.size(), 2u);
  const auto& gpu = h.cluster.gpu_of(0);
  ASSERT_LT(gpu.idle_power_W, gpu.communication_power_W);
  ASSERT_LT(gpu.communication_power_W, gpu.memory_power_W);
  ASSERT_LT(gpu.memory_power_W, gpu.max_power_W);
  EXPECT_DOUBLE_EQ(a[0].compute_s, 3.5);
  EXPECT_DOUBLE_EQ(a[0].communication_s, 2);
  EXPECT_DOUBLE_EQ(a[0].waiting_s, 3);
  EXPECT_DOUBLE_EQ(a[0].idle_s, 0);
  EXPECT_DOUBLE_EQ(a[0].energy_J,
                   gpu.max_power_W * 3 + gpu.memory_power_W * 0.5 + gpu.communication_power_W * (2 + 3));
  EXPECT_DOUBLE_EQ(a[1].compute_s, 3.5);
  EXPECT_DOUBLE_EQ(a[1].communication_s, 1.5);
  EXPECT_DOUBLE_EQ(a[1].waiting_s, 1);
  EXPECT_DOUBLE_EQ(a[1].idle_s, 2.5);
  EXPECT_DOUBLE_EQ(a[1].energy_J, gpu.max_power_W * 3 + gpu.memory_power_W * 0.5 +
                                      gpu.communication_power_W * (1.5 + 1) + gpu.idle_power_W * 2.5);
}

// The spans GPU 0 and GPU 1 wait in NCCL (above), for the bubble analysis.
TEST(GpuPower, WaitSpansEndWhereACommunicationOfTheGpuStarts) {
  testing::TwoStagePipeline h;
  const auto waits = nccl_wait_spans(h.graph, h.timeline);
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0], (std::vector<Interval>{{2, 5}}));
  EXPECT_EQ(waits[1], (std::vector<Interval>{{0, 1}}));
}

// The activity's walk over the spans gives the same waits (one walk serves
// the energy and the bubbles' NCCL waits); with compute drawing no power,
// which that walk does not count as computing, the waits are walked on their
// own and stay the same.
TEST(GpuPower, TheActivityWalkGivesTheNcclWaitSpans) {
  testing::TwoStagePipeline h;
  const auto classes = GpuClasses::of(h.graph, h.timeline, 2);
  std::vector<std::vector<Interval>> waits;
  gpu_activity(h.graph, h.timeline, h.cluster, classes, &waits);
  EXPECT_EQ(waits, (std::vector<std::vector<Interval>>{{{2, 5}}, {{0, 1}}}));
  auto unpowered = h.cluster;
  for (auto& group : unpowered.groups) {
    group.gpu.max_power_W = 0;
    group.gpu.memory_power_W = 0;
  }
  waits.clear();
  const auto a = gpu_activity(h.graph, h.timeline, unpowered, classes, &waits);
  EXPECT_EQ(waits, (std::vector<std::vector<Interval>>{{{2, 5}}, {{0, 1}}}));
  EXPECT_DOUBLE_EQ(a[0].compute_s, 0);  // the activity's walk saw no compute
  // Classes of another GPU count: no waits (the bubbles compute their own).
  waits.assign(1, {{0, 1}});
  gpu_activity(h.graph, h.timeline, h.cluster, GpuClasses::of(h.graph, h.timeline, 1), &waits);
  EXPECT_TRUE(waits.empty());
}

// The H100-SXM's power levels are the ones docs/calibration.md ("GPU power")
// gives with their sources: 700 W board limit, 140 W idle in P0 (nvidia-smi
// in wilicc/gpu-burn#114), NCCL-only 60% of the limit (fitted to the founding
// paper's power per GPU, docs/founding_studies.md).
TEST(GpuPower, H100CatalogueLevelsAreTheDocumentedOnes) {
  const auto h100 = platforms::find_gpu("H100");
  ASSERT_TRUE(h100.has_value());
  EXPECT_DOUBLE_EQ(h100->max_power_W, 700);
  EXPECT_DOUBLE_EQ(h100->idle_power_W, 140);
  EXPECT_DOUBLE_EQ(h100->communication_power_W, 0.6 * 700);
  EXPECT_DOUBLE_EQ(h100->memory_power_W, 0.7 * 700);
}

// Idle energy counts the NCCL-only spans, transfers and waits in NCCL, at
// communication power and the rest at idle power (GpuPower above: 2 + 3 s
// and none on GPU 0, 1.5 + 1 s and 2.5 s on GPU 1). By cause (bubbles_test:
// GPU 0 loses 2 s to p2p transfers and 3 s of warm-up / cool-down, all in
// NCCL; GPU 1 1.5 s of p2p, 1 s of warm-up waiting in NCCL's receive and
// 2 s of cool-down idle, and 0.5 s waiting for GPU 0's optimizer, idle).
TEST(Energy, PerTokenAveragePowerAndIdleEnergy) {
  testing::TwoStagePipeline h;
  h.timeline.gpu_energy_J = {1000, 2000};
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  const auto b = analyze_bubbles(h.graph, h.timeline, h.plan);
  const auto e = analyze_energy(h.graph, h.timeline, s, b, h.cluster);
  const auto& gpu = h.cluster.gpu_of(0);
  ASSERT_TRUE(e.measured);
  EXPECT_DOUBLE_EQ(e.energy_J, 3000);
  EXPECT_DOUBLE_EQ(e.energy_per_token_J, 3000.0 / 100);  // one sequence of 100 tokens
  EXPECT_DOUBLE_EQ(e.cluster_power_W, 3000 / 8.5);
  EXPECT_DOUBLE_EQ(e.average_power_per_gpu_W, 3000 / 8.5 / 2);
  EXPECT_DOUBLE_EQ(e.gpus[1].average_power_W, 2000 / 8.5);
  EXPECT_DOUBLE_EQ(e.gpus[0].communication_energy_J, gpu.communication_power_W * 5);
  EXPECT_DOUBLE_EQ(e.gpus[0].idle_energy_J, gpu.communication_power_W * 5);
  EXPECT_DOUBLE_EQ(e.communication_energy_J, gpu.communication_power_W * (5 + 2.5));
  EXPECT_DOUBLE_EQ(e.idle_energy_J, gpu.communication_power_W * 7.5 + gpu.idle_power_W * 2.5);
  auto by = [&](BubbleCause c) { return e.idle_energy_by_cause_J[static_cast<std::size_t>(c)]; };
  EXPECT_DOUBLE_EQ(by(BubbleCause::p2p_wait), gpu.communication_power_W * (2 + 1.5));
  EXPECT_DOUBLE_EQ(by(BubbleCause::warmup_cooldown),
                   gpu.communication_power_W * (3 + 1) + gpu.idle_power_W * 2);
  EXPECT_DOUBLE_EQ(by(BubbleCause::optimizer), gpu.idle_power_W * 0.5);
}

TEST(Energy, WithoutMeasurementsNothingIsMade) {
  testing::TwoStagePipeline h;
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  const auto e =
      analyze_energy(h.graph, h.timeline, s, analyze_bubbles(h.graph, h.timeline, h.plan), h.cluster);
  EXPECT_FALSE(e.measured);
  EXPECT_EQ(e.energy_J, 0);
}

// build_report reads the memory curves and GPU activity the replay computed
// with its summary (analysis/report.hpp) instead of computing them again:
// given the same ones it reports what it computes itself; given others (a
// GPU's peak changed, the two GPUs' activity swapped) it reports those.
TEST(Report, ReadsTheMemoryCurvesAndActivityComputedWithTheSummary) {
  testing::TwoStagePipeline h;
  h.timeline.gpu_energy_J = {1000, 2000};
  const RunContext run{"two", "", h.cluster, h.model, h.plan, h.graph, nullptr};
  const auto curves = memory_curves(h.graph, h.timeline);
  const auto activity = gpu_activity(h.graph, h.timeline, h.cluster);
  const auto summary = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  const auto alone = build_report(run, h.timeline, &summary);
  const auto given =
      build_report(run, h.timeline, &summary, std::nullopt, {.memory = &curves, .activity = &activity});
  ASSERT_EQ(given.memory.gpus.size(), 2u);
  ASSERT_EQ(given.energy.gpus.size(), 2u);
  for (std::size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(given.memory.gpus[g].peak_bytes, alone.memory.gpus[g].peak_bytes) << g;
    EXPECT_EQ(given.memory.gpus[g].samples().size(), alone.memory.gpus[g].samples().size()) << g;
    EXPECT_EQ(given.energy.gpus[g].idle_energy_J, alone.energy.gpus[g].idle_energy_J) << g;
  }
  EXPECT_EQ(alone.memory.gpus[0].peak_bytes, 110);
  auto swapped_curves = curves;
  swapped_curves.gpus[0].peak_bytes = 12345;
  auto swapped_activity = activity;
  std::swap(swapped_activity[0], swapped_activity[1]);
  const auto other = build_report(run, h.timeline, &summary, std::nullopt,
                                  {.memory = &swapped_curves, .activity = &swapped_activity});
  EXPECT_EQ(other.memory.gpus[0].peak_bytes, 12345);
  const auto& gpu = h.cluster.gpu_of(0);
  EXPECT_DOUBLE_EQ(other.energy.gpus[0].communication_energy_J,
                   gpu.communication_power_W * (activity[1].communication_s + activity[1].waiting_s));
  EXPECT_NE(other.energy.gpus[0].communication_energy_J, alone.energy.gpus[0].communication_energy_J);
}

}  // namespace
}  // namespace trainsim::analysis
