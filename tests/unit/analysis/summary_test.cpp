#include "analysis/summary.hpp"

#include <gtest/gtest.h>

#include "support/test_cluster.hpp"

namespace trainsim::analysis {
namespace {

using workloads::Task;
using workloads::TaskKind;

// Two GPUs in a 2-stage pipeline, one micro-batch, hand-made timeline:
//   GPU 0: F [0,1]            send [1,2]                 B [4,6]
//   GPU 1:                    (receives [1,2])  F [2,3]  B [3,4]... see below
struct HandMade {
  workloads::TaskGraph graph;
  Timeline timeline;
  workloads::ModelSpec model;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 1};
  platforms::ClusterSpec cluster = testing::uniform_cluster(1, 2, 1e9, 0);

  HandMade() {
    model.seq_len = 1000;
    graph.gpu_count = 2;
    auto f0 = graph.add(
        {.kind = TaskKind::forward, .gpu = 0, .stage = 0, .model_flops = 100, .hardware_flops = 100});
    auto s0 =
        graph.add({.kind = TaskKind::send, .comm = workloads::CommKind::pp, .gpu = 0, .peer = 1, .stage = 0});
    auto f1 = graph.add(
        {.kind = TaskKind::forward, .gpu = 1, .stage = 1, .model_flops = 100, .hardware_flops = 100});
    auto b1 = graph.add(
        {.kind = TaskKind::backward, .gpu = 1, .stage = 1, .model_flops = 200, .hardware_flops = 300});
    auto b0 = graph.add(
        {.kind = TaskKind::backward, .gpu = 0, .stage = 0, .model_flops = 200, .hardware_flops = 300});
    graph.seal();
    timeline.records = {{f0, 0, Stream::compute, 0, 1},
                        {s0, 0, Stream::pp_comm, 1, 2},
                        {f1, 1, Stream::compute, 2, 3},
                        {b1, 1, Stream::compute, 3, 5},
                        {b0, 0, Stream::compute, 6, 8}};
    timeline.end_s = 10;
  }
};

TEST(Summary, UsageSplitsEachGpuIntoComputeExposedCommunicationAndIdle) {
  HandMade h;
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(s.gpus[0].compute_s, 3);
  EXPECT_DOUBLE_EQ(s.gpus[0].exposed_comm_s, 1);  // its send
  EXPECT_DOUBLE_EQ(s.gpus[0].idle_s, 6);
  EXPECT_DOUBLE_EQ(s.gpus[1].compute_s, 3);
  EXPECT_DOUBLE_EQ(s.gpus[1].exposed_comm_s, 1);  // the receive of the same transfer
  EXPECT_DOUBLE_EQ(s.gpus[1].idle_s, 6);
  for (const auto& g : s.gpus)
    EXPECT_DOUBLE_EQ(g.compute_s + g.exposed_comm_s + g.idle_s, 10);
  EXPECT_DOUBLE_EQ(s.stages[0].bubble_fraction, 0.6);
  EXPECT_DOUBLE_EQ(s.bubble_fraction, 0.6);
}

TEST(Summary, ThroughputAndMfuFollowFromFlopsAndTime) {
  HandMade h;
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  EXPECT_DOUBLE_EQ(s.iteration_time_s, 10);
  EXPECT_DOUBLE_EQ(s.tokens_per_s, 1000.0 / 10);
  EXPECT_DOUBLE_EQ(s.model_flops, 600);
  EXPECT_DOUBLE_EQ(s.hardware_flops, 800);
  EXPECT_DOUBLE_EQ(s.mfu, 600 / (10 * 2 * 312e12));
  EXPECT_DOUBLE_EQ(s.hfu, 800 / (10 * 2 * 312e12));
}

// The named definitions count their own FLOPs from the model's shape, over
// the same iteration time and bf16 peaks; without a shape they read 0.
TEST(Summary, NamedMfuDefinitionsCountTheirFlopsAgainstTheSamePeaks) {
  HandMade h;
  EXPECT_EQ(summarize(h.graph, h.timeline, h.model, h.plan, h.cluster).mfu_6n, 0);
  h.model = *workloads::find_model_preset("llama3-8b");
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  // One sequence of 8,192 tokens in 10 s on two GPUs of 312 TFLOP/s;
  // 6N = 48,181,567,488 FLOPs per token (mfu_definitions_test).
  EXPECT_DOUBLE_EQ(s.mfu_6n, 48181567488.0 * 8192 / (10 * 2 * 312e12));
  EXPECT_DOUBLE_EQ(s.mfu_palm, 57914449920.0 * 8192 / (10 * 2 * 312e12));
  EXPECT_DOUBLE_EQ(s.mfu_nvidia, 57912852480.0 * 8192 / (10 * 2 * 312e12));
  EXPECT_DOUBLE_EQ(s.mfu, 600 / (10 * 2 * 312e12));  // the tasks' FLOPs, as before
}

TEST(Summary, CommunicationUnderComputeIsOverlapNotExposed) {
  HandMade h;
  h.timeline.records.recorded()[1] = {h.timeline.records[1].task, 0, Stream::pp_comm, 0.5, 1.5};
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  EXPECT_DOUBLE_EQ(s.gpus[0].overlap_s, 0.5);
  EXPECT_DOUBLE_EQ(s.gpus[0].exposed_comm_s, 0.5);
}

}  // namespace
}  // namespace trainsim::analysis
