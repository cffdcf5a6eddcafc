// TaskGraph's own behaviour: moving one keeps every task and dependency
// (both directions) without copying them (workloads/task_graph.hpp: Boost
// 1.74's adjacency_list has no move of its own).
#include "workloads/task_graph.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace trainsim::workloads {
namespace {

TaskGraph three_tasks() {
  TaskGraph g;
  g.gpu_count = 2;
  Task a, b, c;
  a.gpu = 0;
  a.duration_s = 1;
  b.gpu = 1;
  b.duration_s = 2;
  c.gpu = 0;
  c.duration_s = 3;
  const TaskId ia = g.add(a), ib = g.add(b), ic = g.add(c);
  g.depend(ia, ic);
  g.depend(ib, ic);
  g.add_group({0, 1});
  return g;
}

void expect_three_tasks(const TaskGraph& g) {
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(boost::num_edges(g.graph), 2u);
  EXPECT_EQ(boost::in_degree(2, g.graph), 2u);
  EXPECT_EQ(boost::out_degree(0, g.graph), 1u);
  for (const auto e : boost::make_iterator_range(boost::in_edges(2, g.graph)))
    EXPECT_EQ(boost::target(e, g.graph), 2u);
  EXPECT_DOUBLE_EQ(g[1].duration_s, 2);
  EXPECT_EQ(g.groups.size(), 1u);
}

TEST(TaskGraph, AMoveKeepsTasksAndDependenciesWithoutCopyingThem) {
  TaskGraph source = three_tasks();
  const Task* storage = &source[0];
  TaskGraph moved(std::move(source));
  expect_three_tasks(moved);
  EXPECT_EQ(&moved[0], storage);  // the same vertex storage, not a copy

  TaskGraph assigned;
  assigned.add(Task{});
  assigned = std::move(moved);
  expect_three_tasks(assigned);
  EXPECT_EQ(&assigned[0], storage);

  // Copies stay deep.
  const TaskGraph copy = assigned;
  expect_three_tasks(copy);
  EXPECT_NE(&copy[0], storage);
}

}  // namespace
}  // namespace trainsim::workloads
