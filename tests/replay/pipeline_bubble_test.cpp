// With uniform stages and free communication, a replayed 1F1B or GPipe
// iteration takes exactly (m + p - 1)(t_F + t_B) and every stage idles for the
// fraction (p - 1)/(m + p - 1) of it (../shared/reference/schedules.md).
#include <gtest/gtest.h>

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

class ClosedFormBubble : public ::testing::TestWithParam<std::tuple<ScheduleKind, int, int>> {};

TEST_P(ClosedFormBubble, IterationTimeAndPerStageBubbleMatchTheFormula) {
  const auto [schedule, p, m] = GetParam();
  const double t_f = 1e-3, t_b = 2e-3;
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 24;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m};
  plan.schedule = schedule;
  const auto cluster = testing::free_network_cluster(p);
  const auto graph = workloads::build_iteration(model, plan, cluster, testing::FixedCostModel(t_f, t_b));

  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  const auto summary = analysis::summarize(graph, timeline, model, plan, cluster);

  const double expected_time = (m + p - 1) * (t_f + t_b);
  const double expected_bubble = double(p - 1) / (m + p - 1);
  EXPECT_NEAR(summary.iteration_time_s, expected_time, 1e-6 * expected_time);
  for (const auto& stage : summary.stages) {
    SCOPED_TRACE(stage.stage);
    EXPECT_NEAR(stage.bubble_fraction, expected_bubble, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, ClosedFormBubble,
                         ::testing::Combine(::testing::Values(ScheduleKind::one_f_one_b, ScheduleKind::gpipe),
                                            ::testing::Values(2, 4, 8), ::testing::Values(1, 4, 8, 32)),
                         [](const auto& info) {
                           return std::string(workloads::to_string(std::get<0>(info.param)) == "1f1b"
                                                  ? "OneFOneB"
                                                  : "GPipe") +
                                  "_p" + std::to_string(std::get<1>(info.param)) + "_m" +
                                  std::to_string(std::get<2>(info.param));
                         });

}  // namespace
}  // namespace trainsim::sim
