// Every schedule replayed on SimGrid with uniform stages (FixedCostModel:
// each chunk's F, I and W take fixed times) and a free network, checked
// against its closed form (../shared/reference/schedules.md and each
// generator's reference). One simulation per test (one SimGrid engine per
// process).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "analysis/summary.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::sim {
namespace {

using workloads::ScheduleKind;

struct Costs {
  double f = 1e-3, i = 1e-3, w = 1e-3;
};

struct Run {
  analysis::Summary summary;
  analysis::Timeline timeline;
  workloads::TaskGraph graph;
};

Run replay_schedule(ScheduleKind kind, int p, int m, int v, Costs c) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 48;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m};
  plan.schedule = kind;
  plan.virtual_stages = v;
  const auto cluster = testing::free_network_cluster(p);
  Run run;
  run.graph = workloads::build_iteration(model, plan, cluster, testing::FixedCostModel(c.f, c.i, c.w));
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  run.timeline = replay(run.graph, *zone);
  run.summary = analysis::summarize(run.graph, run.timeline, model, plan, cluster);
  return run;
}

// The free network still charges each transfer its bytes at 1 EB/s: a few
// nanoseconds per iteration, far below this relative tolerance.
constexpr double kTolerance = 1e-6;

void expect_time(const Run& run, double expected_s) {
  EXPECT_NEAR(run.summary.iteration_time_s, expected_s, kTolerance * expected_s);
}

// Idle time of every stage (all stages of these schedules idle equally).
void expect_idle_per_stage(const Run& run, double idle_s) {
  const double t = run.summary.iteration_time_s;
  for (const auto& stage : run.summary.stages) {
    SCOPED_TRACE(stage.stage);
    EXPECT_NEAR(stage.bubble_fraction * t, idle_s, kTolerance * t);
  }
}

// Each GPU computes without a gap from its first op to its last.
void expect_no_gap_once_started(const Run& run) {
  std::vector<std::vector<std::pair<double, double>>> busy(run.graph.gpu_count);
  for (const auto& r : run.timeline.records)
    if (r.stream == analysis::Stream::compute && r.end_s > r.start_s)
      busy[r.gpu].emplace_back(r.start_s, r.end_s);
  for (int g = 0; g < run.graph.gpu_count; ++g) {
    auto& b = busy[g];
    std::sort(b.begin(), b.end());
    for (std::size_t k = 1; k < b.size(); ++k)
      EXPECT_NEAR(b[k].first, b[k - 1].second, kTolerance * b[k].first) << "gpu " << g;
  }
}

// --- Interleaved 1F1B: (m v + p - 1)(t_F + t_B) with per-chunk times, so
// the bubble is (p - 1)/(v m) of the ideal m v (t_F + t_B).
class InterleavedBubble : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(InterleavedBubble, IsPMinusOneOverVmOfTheIdealTime) {
  const auto [p, m, v] = GetParam();
  const Costs c{1e-3, 1e-3, 1e-3};  // full backward 2 ms
  const auto run = replay_schedule(ScheduleKind::interleaved_one_f_one_b, p, m, v, c);
  const double chunk = c.f + c.i + c.w, ideal = m * v * chunk;
  expect_time(run, ideal + (p - 1) * chunk);
  EXPECT_NEAR((run.summary.iteration_time_s - ideal) / ideal, double(p - 1) / (v * m), kTolerance);
  expect_idle_per_stage(run, (p - 1) * chunk);
}

INSTANTIATE_TEST_SUITE_P(Schedules, InterleavedBubble,
                         ::testing::Values(std::make_tuple(4, 8, 2), std::make_tuple(4, 8, 4),
                                           std::make_tuple(2, 6, 3), std::make_tuple(8, 16, 2)),
                         [](const auto& info) {
                           // fmt, not "literal" + std::string: GCC 12 warns falsely (-Wrestrict).
                           return fmt::format("p{}_m{}_v{}", std::get<0>(info.param), std::get<1>(info.param),
                                              std::get<2>(info.param));
                         });

// --- ZB-H1: bubble (p - 1)(T_F + T_B - T_W) (B the input gradient), a
// third of 1F1B's (p - 1)(T_F + T_B + T_W) when all three are equal. Holds
// while T_W <= min(T_F, T_B), as in transformer layers.
TEST(ZbH1Bubble, IsAThirdOfOneFOneBsWithEqualCosts) {
  const int p = 4, m = 8;
  const double t = 1e-3;
  const auto run = replay_schedule(ScheduleKind::zb_h1, p, m, 1, {t, t, t});
  expect_idle_per_stage(run, (p - 1) * (t + t - t));
  const double one_f_one_b_idle = (p - 1) * (t + t + t);
  EXPECT_NEAR(run.summary.stages[0].bubble_fraction * run.summary.iteration_time_s, one_f_one_b_idle / 3,
              kTolerance * run.summary.iteration_time_s);
  expect_time(run, m * 3 * t + (p - 1) * t);
}

TEST(ZbH1Bubble, FollowsTheFormulaWithUnequalCosts) {
  const int p = 8, m = 16;
  const Costs c{1e-3, 2e-3, 0.5e-3};
  const auto run = replay_schedule(ScheduleKind::zb_h1, p, m, 1, c);
  expect_idle_per_stage(run, (p - 1) * (c.f + c.i - c.w));
}

// --- ZB-H2: with T_F = T_B = T_W every stage computes without a gap once
// started (the parallelogram); one isolated iteration still pays the ramp,
// (p - 1) T_F. In general the idle is (p - 1) max(T_F, T_F + T_B - 2 T_W),
// the paper's (p - 1)(T_F + T_B - 2 T_W) or the ramp, whichever is larger.
TEST(ZbH2Bubble, EqualCostsLeaveOnlyTheRamp) {
  const int p = 4, m = 12;
  const double t = 1e-3;
  const auto run = replay_schedule(ScheduleKind::zb_h2, p, m, 1, {t, t, t});
  expect_time(run, 3 * m * t + (p - 1) * t);
  expect_idle_per_stage(run, (p - 1) * t);
  expect_no_gap_once_started(run);
}

TEST(ZbH2Bubble, FollowsThePapersFormulaWhenItExceedsTheRamp) {
  const int p = 4, m = 12;
  const Costs c{1e-3, 2e-3, 0.5e-3};
  const auto run = replay_schedule(ScheduleKind::zb_h2, p, m, 1, c);
  expect_idle_per_stage(run, (p - 1) * (c.f + c.i - 2 * c.w));
}

// --- ZB-V: with equal costs the only idle time is the ramp, (p - 1) T_F of
// one chunk, the least any schedule can have: the last rank cannot start
// before p - 1 chunk forwards and then has 6m ops to run.
TEST(ZbVBubble, EqualCostsLeaveOnlyTheRamp) {
  const int p = 4, m = 8;
  const double t = 1e-3;
  const auto run = replay_schedule(ScheduleKind::zb_v, p, m, 2, {t, t, t});
  expect_time(run, 6 * m * t + (p - 1) * t);
  expect_idle_per_stage(run, (p - 1) * t);
}

// --- DualPipe-V: equal costs reach the same lower bound. The README's
// (PP/2 - 1)(F&B + B - 3W) with PP = 2p stages (B a full backward, F&B =
// F + B here) bounds the replayed idle from above: the reference's runtime
// also waits on its batched sends and receives, a dependency-driven replay
// does not.
TEST(DualPipeVBubble, EqualCostsLeaveOnlyTheRamp) {
  const int p = 4, m = 8;
  const double t = 1e-3;
  const auto run = replay_schedule(ScheduleKind::dualpipe_v, p, m, 2, {t, t, t});
  expect_time(run, 6 * m * t + (p - 1) * t);
  expect_idle_per_stage(run, (p - 1) * t);
}

TEST(DualPipeVBubble, StaysWithinTheReadmeBoundWithUnequalCosts) {
  const int p = 8, m = 16;
  const Costs c{1e-3, 2e-3, 0.5e-3};
  const auto run = replay_schedule(ScheduleKind::dualpipe_v, p, m, 2, c);
  const double full_b = c.i + c.w, readme = (p - 1) * ((c.f + full_b) + full_b - 3 * c.w);
  const double idle = run.summary.iteration_time_s - 2 * m * (c.f + c.i + c.w);
  EXPECT_GT(idle, (p - 1) * c.f * (1 - kTolerance));
  EXPECT_LE(idle, readme);
}

// --- DualPipe: every chunk is a whole stage and runs m / 2 micro-batches,
// so a rank computes m (F + B) as in 1F1B. With equal costs the only idle
// is the ramp to the middle ranks, (p/2 - 1) F: both ends start at once.
// DeepSeek-V3's Table 2 gives (PP/2 - 1)(F&B + B - 3W) (PP = p stages, B a
// full backward, F&B = F + B here: nothing to overlap on a dense model); as
// for DualPipe-V it bounds the dependency-driven replay from above (the
// reference also waits on its batched sends and receives), and it lies
// below ZB1P's (p - 1)(F + B - 2W) and 1F1B's (p - 1)(F + B). The exact
// replayed times are those of the op lists run on their data dependencies
// alone (schedule_checks.hpp's rules, each op timed).
TEST(DualPipeBubble, EqualCostsLeaveOnlyTheRampToTheMiddleRanks) {
  const int p = 4, m = 8;
  const double t = 1e-3;
  const auto run = replay_schedule(ScheduleKind::dualpipe, p, m, 2, {t, t, t});
  expect_time(run, 3 * m * t + (p / 2 - 1) * t);
  const double full_b = 2 * t, table = (p / 2 - 1) * ((t + full_b) + full_b - 3 * t);
  EXPECT_LT((p / 2 - 1) * t, table);
}

TEST(DualPipeBubble, StaysWithinThePapersBoundAndBelowZb1pAndOneFOneB) {
  const int p = 8, m = 16;
  const Costs c{1e-3, 2e-3, 0.5e-3};
  const auto run = replay_schedule(ScheduleKind::dualpipe, p, m, 2, c);
  const double full_b = c.i + c.w;
  const double table = (p / 2 - 1) * ((c.f + full_b) + full_b - 3 * c.w);  // 13.5 ms
  const double zb1p = (p - 1) * (c.f + full_b - 2 * c.w);                  // 17.5 ms
  const double one_f_one_b = (p - 1) * (c.f + full_b);                     // 24.5 ms
  const double idle = run.summary.iteration_time_s - m * (c.f + c.i + c.w);
  expect_time(run, m * (c.f + c.i + c.w) + 9.5e-3);
  EXPECT_LE(idle, table * (1 + kTolerance));
  EXPECT_LT(table, zb1p);
  EXPECT_LT(zb1p, one_f_one_b);
}

// --- BPipe: same order as 1F1B, and with a free network its transfers cost
// nothing, so the iteration is 1F1B's (m + p - 1)(t_F + t_B) exactly.
TEST(BPipeBubble, FreeNetworkGivesOneFOneBsIterationTime) {
  const int p = 4, m = 8;
  const Costs c{1e-3, 1e-3, 1e-3};
  const auto run = replay_schedule(ScheduleKind::bpipe, p, m, 1, c);
  int transfers = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(run.graph.dependencies())))
    transfers += run.graph[v].transfer == workloads::TransferKind::evict;
  EXPECT_EQ(transfers, 2);
  expect_time(run, (m + p - 1) * (c.f + c.i + c.w));
  expect_idle_per_stage(run, (p - 1) * (c.f + c.i + c.w));
}

}  // namespace
}  // namespace trainsim::sim
