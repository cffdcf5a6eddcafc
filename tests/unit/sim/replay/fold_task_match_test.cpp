// The folds' task matching (sim/replay/fold_task_match.hpp) compares a
// task's memory events and dependencies with its image's as sets, and skips
// the sorting when the two lists come in the same order. Pinned here: lists
// in another order (a spanning collective's members shifted by the
// rotation) still match through the sorting, and a list that differs in one
// element fails whether its order matches or not.
#include <gtest/gtest.h>

#include <vector>

#include "sim/replay/fold_task_match.hpp"

namespace trainsim::sim::fold_match {
namespace {

using workloads::MemoryKind;

// Two tasks on GPUs 0 and 1 (the rotation swaps them), each with an event on
// both GPUs: task 0 lists `first` then `second`, task 1 lists its own two.
struct TwoTasks {
  TaskGraph graph;
  std::vector<int> swap{1, 0};
  std::vector<MemoryEvent> x, y;  // scratch
  TwoTasks(double a0, double a1, double b0, double b1) {
    for (int gpu : {0, 1}) {
      Task t;
      t.kind = TaskKind::collective;
      t.gpu = gpu;
      graph.add(t);
    }
    graph.add_memory(0, 0, workloads::MemoryEvent::At::start, MemoryKind::activations, a0);
    graph.add_memory(0, 1, workloads::MemoryEvent::At::start, MemoryKind::activations, a1);
    graph.add_memory(1, 0, workloads::MemoryEvent::At::start, MemoryKind::activations, b0);
    graph.add_memory(1, 1, workloads::MemoryEvent::At::start, MemoryKind::activations, b1);
    graph.seal();
  }
  bool alike() { return same_memory(graph, graph[0], graph[1], swap, x, y); }
};

TEST(FoldTaskMatch, MemoryEventsMatchInTheSameOrderOrAnother) {
  // Task 0's events mapped: (GPU 1, 5), (GPU 0, 7).
  EXPECT_TRUE(TwoTasks(5, 7, 7, 5).alike());  // task 1 lists (0, 7), (1, 5): another order
  EXPECT_TRUE(TwoTasks(7, 7, 7, 7).alike());  // the same order
}

TEST(FoldTaskMatch, MemoryEventsThatDifferFailInEitherOrder) {
  EXPECT_FALSE(TwoTasks(5, 7, 7, 6).alike());  // another order, one element off
  EXPECT_FALSE(TwoTasks(7, 7, 7, 6).alike());  // the same order, one element off
}

// Tasks 0 -> {2, 3} and their images 1 -> {3, 2} (task_image swaps 0 with 1
// and 2 with 3): the dependencies map onto the image's added in either order.
std::string dependency_problem(bool image_in_order, bool image_complete) {
  TaskGraph graph;
  for (int k = 0; k < 4; ++k)
    graph.add(Task{});
  graph.depend(0, 2);
  graph.depend(0, 3);
  if (image_in_order) {
    graph.depend(1, 3);
    if (image_complete)
      graph.depend(1, 2);
  } else {
    if (image_complete)
      graph.depend(1, 2);
    graph.depend(1, 3);
  }
  graph.seal();
  // Tasks 2 and 3 have no dependencies; their images none either.
  const std::vector<std::uint32_t> image{1, 0, 3, 2};
  return dependencies_map_onto_images(graph, image, [](TaskId, TaskId) { return std::string{}; });
}

TEST(FoldTaskMatch, DependenciesMapOntoTheImagesAddedInEitherOrder) {
  EXPECT_EQ(dependency_problem(true, true), "");
  EXPECT_EQ(dependency_problem(false, true), "");
}

TEST(FoldTaskMatch, AMissingDependencyFailsInEitherOrder) {
  EXPECT_NE(dependency_problem(true, false), "");
  EXPECT_NE(dependency_problem(false, false), "");
}

}  // namespace
}  // namespace trainsim::sim::fold_match
