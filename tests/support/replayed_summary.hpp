#pragma once
// One iteration of (model, plan, cluster, cost) built, replayed on SimGrid
// and summarised: what a replay test compares against a closed form or the
// plan search's estimate. One SimGrid engine per process: call it once per
// test (ctest runs each test in its own process).
#include "analysis/summary.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::testing {

inline analysis::Summary replayed_summary(const workloads::ModelSpec& model,
                                          const workloads::ParallelPlan& plan,
                                          const platforms::ClusterSpec& cluster,
                                          const workloads::CostModel& cost) {
  const auto graph = workloads::build_iteration(model, plan, cluster, cost);
  auto engine = sim::make_engine();
  auto* zone = new sim::ClusterZone(cluster);  // the engine owns its root netzone
  const auto timeline = sim::replay(graph, *zone);
  return analysis::summarize(graph, timeline, model, plan, cluster);
}

}  // namespace trainsim::testing
