#include "analysis/bubbles.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "analysis/execution_index.hpp"
#include "analysis/summary.hpp"
#include "support/hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

using workloads::CommKind;
using workloads::TaskKind;

double cause(const GpuBubbles& g, BubbleCause c) {
  return g.cause_s[static_cast<std::size_t>(c)];
}
double sum(const CauseSeconds& s) {
  return std::accumulate(s.begin(), s.end(), 0.0);
}

// GPU 0 does F [0,1] and B [6,8]: its gap [1,6) waits for the gradient, which
// was in flight [5,6) (p2p), computed by stage 1 [2,5) (warm-up/cool-down),
// after the activation was in flight [1,2) (p2p). Then its own optimizer.
TEST(Bubbles, EachGapIsBlamedOnWhatTheNextOpWaitedFor) {
  testing::TwoStagePipeline h;
  const auto b = analyze_bubbles(h.graph, h.timeline, h.plan);
  ASSERT_EQ(b.gpus.size(), 2u);
  const auto& g0 = b.gpus[0];
  EXPECT_DOUBLE_EQ(g0.forward_backward_s, 3);
  EXPECT_DOUBLE_EQ(g0.lost_s, 5.5);
  EXPECT_DOUBLE_EQ(cause(g0, BubbleCause::p2p_wait), 2);
  EXPECT_DOUBLE_EQ(cause(g0, BubbleCause::warmup_cooldown), 3);
  EXPECT_DOUBLE_EQ(cause(g0, BubbleCause::optimizer), 0.5);
  EXPECT_DOUBLE_EQ(cause(g0, BubbleCause::straggler), 0);
  // GPU 1 waits [0,2) for F0 then the send; after its optimizer it waits
  // [5.5,8.5) for the end of the iteration: GPU 0's optimizer [8,8.5), its
  // backward [6,8) and the tail of the gradient transfer [5.5,6).
  const auto& g1 = b.gpus[1];
  EXPECT_DOUBLE_EQ(cause(g1, BubbleCause::p2p_wait), 1 + 0.5);
  EXPECT_DOUBLE_EQ(cause(g1, BubbleCause::warmup_cooldown), 1 + 2);
  EXPECT_DOUBLE_EQ(cause(g1, BubbleCause::optimizer), 0.5 + 0.5);
}

TEST(Bubbles, CausesAddUpExactlyToLostTimeAndTheirIdlePartsToIdleTime) {
  testing::TwoStagePipeline h;
  const auto b = analyze_bubbles(h.graph, h.timeline, h.plan);
  const auto s = summarize(h.graph, h.timeline, h.model, h.plan, h.cluster);
  for (std::size_t g = 0; g < 2; ++g) {
    SCOPED_TRACE(g);
    EXPECT_DOUBLE_EQ(sum(b.gpus[g].cause_s), b.gpus[g].lost_s);
    EXPECT_DOUBLE_EQ(b.gpus[g].lost_s, s.gpus[g].idle_s + s.gpus[g].exposed_comm_s + b.gpus[g].optimizer_s);
    EXPECT_DOUBLE_EQ(sum(b.gpus[g].idle_part_s), s.gpus[g].idle_s);
    EXPECT_DOUBLE_EQ(b.gpus[g].idle_s, s.gpus[g].idle_s);
  }
  // The transfers GPU 0 waited on were its own communication: not idle.
  EXPECT_DOUBLE_EQ(b.gpus[0].idle_part_s[static_cast<std::size_t>(BubbleCause::p2p_wait)], 0);
  EXPECT_DOUBLE_EQ(b.stages[1].lost_s, 5.5);
  EXPECT_DOUBLE_EQ(b.total_lost_s, 11);
}

// GPU 1 runs every op twice as slowly as nominal. Re-timed at nominal speed
// the iteration takes 4.5 s instead of 7.5 s, so GPU 0, which computes 3 s
// either way, loses 3 s more: all of its wait on GPU 1's backward is the
// straggler's. GPU 1 itself loses no more than it would at full speed.
TEST(Bubbles, ASlowPeerShowsUpAsStragglerTimeOnTheOthers) {
  testing::SlowReplica h;
  const auto b = analyze_bubbles(h.graph, h.timeline, h.plan);
  EXPECT_DOUBLE_EQ(b.reference_iteration_time_s, 4.5);
  const auto& fast = b.gpus[0];
  EXPECT_DOUBLE_EQ(cause(fast, BubbleCause::straggler), 3);
  EXPECT_DOUBLE_EQ(cause(fast, BubbleCause::warmup_cooldown), 0);
  EXPECT_DOUBLE_EQ(cause(fast, BubbleCause::dp_comm), 1);
  EXPECT_DOUBLE_EQ(cause(fast, BubbleCause::optimizer), 0.5);
  EXPECT_DOUBLE_EQ(sum(fast.cause_s), fast.lost_s);
  const auto& slow = b.gpus[1];
  EXPECT_DOUBLE_EQ(cause(slow, BubbleCause::straggler), 0);
  EXPECT_DOUBLE_EQ(cause(slow, BubbleCause::dp_comm), 1);
  EXPECT_DOUBLE_EQ(sum(slow.cause_s), slow.lost_s);
  // The straggler wait happened with nothing running on GPU 0: all idle.
  EXPECT_DOUBLE_EQ(fast.idle_part_s[static_cast<std::size_t>(BubbleCause::straggler)], 3);
}

// An op split into pieces of different lengths (per-layer pieces, GEMM
// chunks) on two replicas at full speed: each piece's reference is its own
// nominal length, so the re-timed iteration is the one that ran and no
// time is a straggler's.
//   GPU g: F [0,1]  B layer 1 [1,1.5]  B layer 0 [1.5,3]  all-reduce [3,4]  opt [4,4.5]
TEST(Bubbles, PiecesOfOneOpKeepTheirOwnReferenceDurations) {
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  const int group = graph.add_group({0, 1});
  analysis::Timeline timeline;
  const auto all_reduce = graph.add(
      {.kind = TaskKind::collective, .comm = CommKind::dp, .group = group, .stage = 0, .bytes = 1e6});
  for (int gpu = 0; gpu < 2; ++gpu) {
    const auto f =
        graph.add({.kind = TaskKind::forward, .gpu = gpu, .stage = 0, .micro_batch = 0, .duration_s = 1});
    const auto b1 = graph.add({.kind = TaskKind::backward,
                               .layer = 1,
                               .gpu = gpu,
                               .stage = 0,
                               .micro_batch = 0,
                               .duration_s = 0.5});
    const auto b0 = graph.add({.kind = TaskKind::backward,
                               .layer = 0,
                               .gpu = gpu,
                               .stage = 0,
                               .micro_batch = 0,
                               .duration_s = 1.5});
    const auto opt = graph.add({.kind = TaskKind::optimizer, .gpu = gpu, .stage = 0, .duration_s = 0.5});
    graph.depend(f, b1);
    graph.depend(b1, b0);
    graph.depend(b0, all_reduce);
    graph.depend(all_reduce, opt);
    timeline.records.push_back({f, gpu, Stream::compute, 0, 1});
    timeline.records.push_back({b1, gpu, Stream::compute, 1, 1.5});
    timeline.records.push_back({b0, gpu, Stream::compute, 1.5, 3});
    timeline.records.push_back({all_reduce, gpu, Stream::dp_comm, 3, 4});
    timeline.records.push_back({opt, gpu, Stream::compute, 4, 4.5});
  }
  timeline.end_s = 4.5;
  const workloads::ParallelPlan plan{
      .dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2};
  graph.seal();
  const auto b = analyze_bubbles(graph, timeline, plan);
  EXPECT_DOUBLE_EQ(b.reference_iteration_time_s, 4.5);
  for (const auto& g : b.gpus)
    EXPECT_DOUBLE_EQ(cause(g, BubbleCause::straggler), 0);
}

// A backward started 0.5 s after its forward ended (a launch delay) on both
// GPUs; GPU 1's forward ran 2 s for a nominal 1 s. Re-timed at the reference
// durations, each backward starts its delay after its forward's re-timed
// end: 1 + 0.5, ending at 2.5 on both (not 1 + 1.5 on GPU 1, which its
// recorded start less the forward's re-timed end would give).
//   GPU 0: F [0,1]  B [1.5,2.5]      GPU 1: F [0,2]  B [2.5,3.5]
TEST(Bubbles, TheRetimedIterationKeepsEachLaunchDelayAfterTheRecordedRelease) {
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  analysis::Timeline timeline;
  for (int gpu = 0; gpu < 2; ++gpu) {
    const double f_end = gpu == 0 ? 1 : 2;
    const auto f =
        graph.add({.kind = TaskKind::forward, .gpu = gpu, .stage = 0, .micro_batch = 0, .duration_s = 1});
    const auto b =
        graph.add({.kind = TaskKind::backward, .gpu = gpu, .stage = 0, .micro_batch = 0, .duration_s = 1});
    graph.depend(f, b);
    timeline.records.push_back({f, gpu, Stream::compute, 0, f_end});
    timeline.records.push_back({b, gpu, Stream::compute, f_end + 0.5, f_end + 1.5});
  }
  timeline.end_s = 3.5;
  const workloads::ParallelPlan plan{
      .dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2};
  graph.seal();
  EXPECT_DOUBLE_EQ(analyze_bubbles(graph, timeline, plan).reference_iteration_time_s, 2.5);
}

// A task whose releaser was picked among tasks that ended at one instant is
// marked tied (the pick is by task id: a fold's rotation need not keep it);
// a task with one latest candidate, or whose stream predecessor is also its
// graph predecessor, is not.
TEST(Bubbles, TheIndexMarksAReleaserPickedAmongTasksEndingAtOneInstant) {
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  const auto a = graph.add({.kind = TaskKind::forward, .gpu = 0, .stage = 0, .duration_s = 1});
  const auto b = graph.add({.kind = TaskKind::forward, .gpu = 1, .stage = 0, .duration_s = 1});
  const auto c = graph.add({.kind = TaskKind::backward, .gpu = 0, .stage = 0, .duration_s = 1});
  const auto d = graph.add({.kind = TaskKind::backward, .gpu = 1, .stage = 0, .duration_s = 1});
  graph.depend(a, c);
  graph.depend(b, c);  // ends when a does
  graph.depend(b, d);
  graph.seal();
  Timeline timeline;
  timeline.records = {{a, 0, Stream::compute, 0, 1},
                      {b, 1, Stream::compute, 0, 1},
                      {c, 0, Stream::compute, 1, 2},
                      {d, 1, Stream::compute, 1, 3}};
  timeline.end_s = 3;
  const ExecutionIndex index(graph, timeline);
  EXPECT_EQ(index.releaser(c), a);  // the lower id of the two
  EXPECT_TRUE(index.tied(c));
  EXPECT_EQ(index.releaser(d), b);  // b is d's graph and stream predecessor: one candidate
  EXPECT_FALSE(index.tied(d));
  EXPECT_FALSE(index.tied(a));

  testing::TwoStagePipeline h;
  const ExecutionIndex pipeline(h.graph, h.timeline);
  EXPECT_EQ(pipeline.releaser(h.b0), h.s1);  // s1 ends at 6, f0 at 1
  EXPECT_FALSE(pipeline.tied(h.b0));
}

TEST(Bubbles, EveryCauseHasAStableKeyAndADescription) {
  for (BubbleCause c : kBubbleCauses) {
    EXPECT_NE(to_string(c), "?");
    EXPECT_NE(describe(c), "?");
  }
  EXPECT_EQ(to_string(BubbleCause::warmup_cooldown), "warmup_cooldown");
}

}  // namespace
}  // namespace trainsim::analysis
