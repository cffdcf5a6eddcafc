#include <gtest/gtest.h>

#include "analysis/energy.hpp"
#include "analysis/memory.hpp"
#include "analysis/plan_memory.hpp"
#include "hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

using testing::Stream;
using workloads::TaskKind;

// Each forward keeps 10 bytes until its backward ends; 100 bytes resident.
class TenBytesPerMicroBatch final : public MemoryModel {
 public:
  std::string description() const override { return "test"; }
  std::vector<std::pair<std::string, double>> resident_bytes(int) const override {
    return {{"weights", 100}};
  }
  MemoryEffect effect(const workloads::Task& task, int gpu) const override {
    if (task.gpu != gpu)
      return {};
    if (task.kind == TaskKind::forward)
      return {.alloc_at_start_bytes = 10};
    if (task.kind == TaskKind::backward)
      return {.free_at_end_bytes = 10};
    return {};
  }
};

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
  const auto cluster = testing::uniform_cluster(1, 1, 1e9, 0);
  const auto m = memory_over_time(graph, t, TenBytesPerMicroBatch(), cluster);
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

TEST(Memory, PlanModelUsesKorthikantiActivationsAndBf16Weights) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  workloads::ParallelPlan plan{.dp = 1, .tp = 2, .pp = 4, .micro_batch_size = 2, .global_batch_size = 8};
  const PlanMemoryModel m(model, plan);
  const double s = model.seq_len, b = 2, h = model.hidden, a = model.heads;
  const double per_layer = s * b * h * (10 + 24 / 2.0 + 5 * a * s / (h * 2));
  EXPECT_DOUBLE_EQ(m.activation_bytes_per_micro_batch(1), per_layer * model.layers / 4);
  plan.recompute = workloads::Recompute::full;
  EXPECT_DOUBLE_EQ(PlanMemoryModel(model, plan).activation_bytes_per_micro_batch(1),
                   2 * s * b * h * model.layers / 4);
  EXPECT_GT(m.weight_bytes(0), m.weight_bytes(1));  // the embedding lives on stage 0
  // Two chunks per GPU: each forward stores half the stage's layers.
  EXPECT_DOUBLE_EQ(PlanMemoryModel(model, plan, 2).activation_bytes_per_micro_batch(1),
                   PlanMemoryModel(model, plan).activation_bytes_per_micro_batch(1) / 2);
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
