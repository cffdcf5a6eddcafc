// The fold's check (sim/replay/replica_fold.hpp) compares every task of the
// scenario's graph with its image, however the graph was built: the
// builder copies replicas alike from the first (TaskGraph::append_image),
// but a replica that differs in one task, one memory event or one
// dependency is still refused, and so is a task across two classes. One TEST = one zone (one engine per
// process).
#include <gtest/gtest.h>

#include <string>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replica_fold.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::sim {
namespace {

using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

// The first compute task with a memory event on a GPU of data-parallel
// replica `dp`.
TaskId compute_task_of_replica(const TaskGraph& graph, const workloads::ParallelPlan& plan, int dp) {
  for (TaskId id = 0; id < graph.size(); ++id)
    if (workloads::is_compute(graph[id].kind) && graph[id].gpu >= 0 && plan.dp_rank_of(graph[id].gpu) == dp &&
        graph[id].memory_end > graph[id].memory_begin)
      return id;
  throw std::logic_error("no compute task with memory events in that replica");
}

TEST(ReplicaFoldCheck, AReplicaThatDiffersInOneTaskOrOneMemoryEventIsRefused) {
  // scale-512 folds its 8 replicas in classes of 2 (the rotation by 4).
  const auto s = scenario::load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/scale-512.yaml",
                                         {"model.layers=16"});
  const TaskGraph graph = build_task_graph(s);
  auto engine = make_engine();
  auto* zone = new ClusterZone(s.cluster);
  const int period = 4;
  ReplicaFold fold;
  ASSERT_EQ(rotation_problem(graph, s, *zone, period, fold), "");
  ASSERT_EQ(fold.order, 2);
  // Each task maps onto the task of the replica `period` on (the builder's
  // copy of it), and the rotation is a bijection.
  const TaskId first = compute_task_of_replica(graph, s.plan, 1);
  EXPECT_EQ(fold.task_image[first], compute_task_of_replica(graph, s.plan, 1 + period));

  // A task of replica 5 (a copy of replica 0's) runs longer.
  {
    TaskGraph changed = graph;
    changed[compute_task_of_replica(changed, s.plan, 5)].duration_s *= 1.5;
    ReplicaFold refused;
    EXPECT_NE(rotation_problem(changed, s, *zone, period, refused).find("has no image"), std::string::npos);
  }
  // One of its memory events frees another amount.
  {
    TaskGraph changed = graph;
    const auto& t = changed[compute_task_of_replica(changed, s.plan, 5)];
    changed.memory[t.memory_begin].bytes += 1;
    ReplicaFold refused;
    EXPECT_NE(rotation_problem(changed, s, *zone, period, refused).find("memory events differ"),
              std::string::npos);
  }
  // A task on another GPU of its replica: the images of its neighbours'
  // tasks are no longer its own neighbours'.
  {
    TaskGraph changed = graph;
    auto& t = changed[compute_task_of_replica(changed, s.plan, 5)];
    t.gpu = s.plan.gpu_of(s.plan.pp_rank_of(t.gpu), 5, (s.plan.tp_rank_of(t.gpu) + 1) % s.plan.tp);
    ReplicaFold refused;
    EXPECT_NE(rotation_problem(changed, s, *zone, period, refused), "");
  }
  // A send of replica 1 to replica 5 and its image from replica 5 to
  // replica 1: each task still maps onto its image, but the send spans the
  // windows of two classes (its window is found as its anchor is).
  {
    TaskId send = 0;
    while (graph[send].kind != TaskKind::send || s.plan.dp_rank_of(graph[send].gpu) != 1)
      ++send;
    const TaskId image = fold.task_image[send];
    TaskGraph changed = graph;
    const auto moved = [&](int gpu, int dp) {
      return s.plan.gpu_of(s.plan.pp_rank_of(gpu), dp, s.plan.tp_rank_of(gpu), s.plan.cp_rank_of(gpu));
    };
    changed[send].peer = moved(graph[send].peer, 1 + period);
    changed[image].peer = moved(graph[image].peer, 1);
    ReplicaFold refused;
    EXPECT_NE(
        rotation_problem(changed, s, *zone, period, refused).find("spans replicas of different classes"),
        std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim::sim
