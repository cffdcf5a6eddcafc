#include <gtest/gtest.h>

#include "analysis/energy.hpp"
#include "analysis/memory.hpp"
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
  graph.seal_memory();
  const auto cluster = testing::uniform_cluster(1, 1, 1e9, 0);
  const auto m = memory_over_time(graph, t, cluster);
  ASSERT_EQ(m.gpus.size(), 1u);
  const auto& g = m.gpus[0];
  EXPECT_DOUBLE_EQ(g.resident_bytes, 100);
  EXPECT_DOUBLE_EQ(g.peak_bytes, 120);
  EXPECT_DOUBLE_EQ(g.peak_time_s, 1);
  ASSERT_EQ(g.samples.size(), 4u);
  EXPECT_DOUBLE_EQ(g.samples[0].bytes, 110);  // F0 allocates at time 0
  EXPECT_DOUBLE_EQ(g.samples[1].bytes, 120);
  EXPECT_DOUBLE_EQ(g.samples[2].time_s, 4);
  EXPECT_DOUBLE_EQ(g.samples[3].bytes, 100);
  EXPECT_DOUBLE_EQ(g.capacity_bytes, 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(m.peak_gpu, 0);
}

// GPU 0 computes 3.5 s of 8.5, GPU 1 3.5 s too; A100-80GB idles at 60 W.
TEST(Energy, PerTokenAveragePowerAndIdleEnergy) {
  testing::TwoStagePipeline h;
  h.timeline.gpu_energy_J = {1000, 2000};
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  const auto b = analyze_bubbles(h.graph, h.timeline, h.plan);
  const auto e = analyze_energy(h.timeline, s, b, h.cluster);
  ASSERT_TRUE(e.measured);
  EXPECT_DOUBLE_EQ(e.energy_J, 3000);
  EXPECT_DOUBLE_EQ(e.energy_per_token_J, 3000.0 / 100);  // one sequence of 100 tokens
  EXPECT_DOUBLE_EQ(e.cluster_power_W, 3000 / 8.5);
  EXPECT_DOUBLE_EQ(e.average_power_per_gpu_W, 3000 / 8.5 / 2);
  EXPECT_DOUBLE_EQ(e.gpus[1].average_power_W, 2000 / 8.5);
  EXPECT_DOUBLE_EQ(e.gpus[0].idle_energy_J, 60 * (8.5 - 3.5));
  EXPECT_DOUBLE_EQ(e.idle_energy_J, 2 * 60 * 5.0);
  double by_cause = 0;
  for (double j : e.idle_energy_by_cause_J)
    by_cause += j;
  EXPECT_NEAR(by_cause, e.idle_energy_J, 1e-9);
}

TEST(Energy, WithoutMeasurementsNothingIsMade) {
  testing::TwoStagePipeline h;
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  const auto e = analyze_energy(h.timeline, s, analyze_bubbles(h.graph, h.timeline, h.plan), h.cluster);
  EXPECT_FALSE(e.measured);
  EXPECT_EQ(e.energy_J, 0);
}

}  // namespace
}  // namespace trainsim::analysis
