// TaskGraph's own behaviour: sealed into compressed rows, it keeps every
// task's out- and in-edges and the walk over all of them in the order they
// were added (what the adjacency_list it replaced gave the replay, the
// graph fingerprint and the Chakra export); reading before seal() or
// adding after is an internal error; moving one keeps every task and
// dependency without copying them.
#include "workloads/task_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

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
  g.seal();
  return g;
}

void expect_three_tasks(const TaskGraph& g) {
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(boost::num_edges(g.dependencies()), 2u);
  EXPECT_EQ(boost::in_degree(workloads::task_vertex(2), g.dependencies()), 2u);
  EXPECT_EQ(boost::out_degree(workloads::task_vertex(0), g.dependencies()), 1u);
  for (const auto e :
       boost::make_iterator_range(boost::in_edges(workloads::task_vertex(2), g.dependencies())))
    EXPECT_EQ(boost::target(e, g.dependencies()), 2u);
  EXPECT_DOUBLE_EQ(g[1].duration_s, 2);
  EXPECT_EQ(g.groups.size(), 1u);
}

TEST(TaskGraph, AMoveKeepsTasksAndDependenciesWithoutCopyingThem) {
  TaskGraph source = three_tasks();
  const Task* storage = &source[0];
  TaskGraph moved(std::move(source));
  expect_three_tasks(moved);
  EXPECT_EQ(&moved[0], storage);  // the same task storage, not a copy

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

using Pair = std::pair<TaskId, TaskId>;

// Five tasks, dependencies added in an order that is not by source or by
// target (the compressed rows' own order).
const std::vector<Pair> kAdded = {{3, 1}, {0, 1}, {4, 2}, {2, 1}, {0, 3}, {0, 2}, {3, 2}, {0, 1}};

TaskGraph five_tasks() {
  TaskGraph g;
  g.gpu_count = 1;
  for (int k = 0; k < 5; ++k)
    g.add({.gpu = 0, .duration_s = k + 1.0});
  for (const auto& [before, after] : kAdded)
    g.depend(before, after);
  g.seal();
  return g;
}

std::vector<TaskId> in_sources(const TaskGraph& g, TaskId v) {
  std::vector<TaskId> out;
  for (const auto e : boost::make_iterator_range(boost::in_edges(task_vertex(v), g.dependencies())))
    out.push_back(boost::source(e, g.dependencies()));
  return out;
}

std::vector<TaskId> out_targets(const TaskGraph& g, TaskId v) {
  std::vector<TaskId> out;
  for (const auto e : boost::make_iterator_range(boost::out_edges(task_vertex(v), g.dependencies())))
    out.push_back(boost::target(e, g.dependencies()));
  return out;
}

TEST(TaskGraph, SealedKeepsEachTasksOutAndInEdgesInTheOrderAdded) {
  const TaskGraph g = five_tasks();
  EXPECT_EQ(boost::num_edges(g.dependencies()), kAdded.size());
  EXPECT_EQ(out_targets(g, 0), (std::vector<TaskId>{1, 3, 2, 1}));  // a repeated edge kept twice
  EXPECT_EQ(out_targets(g, 3), (std::vector<TaskId>{1, 2}));
  EXPECT_EQ(out_targets(g, 1), (std::vector<TaskId>{}));
  // By source these would read {0, 0, 2, 3} and {0, 3, 4}.
  EXPECT_EQ(in_sources(g, 1), (std::vector<TaskId>{3, 0, 2, 0}));
  EXPECT_EQ(in_sources(g, 2), (std::vector<TaskId>{4, 0, 3}));
  EXPECT_EQ(boost::in_degree(task_vertex(1), g.dependencies()), 4u);
  EXPECT_EQ(boost::in_degree(task_vertex(0), g.dependencies()), 0u);
  // An edge's property is its position in the order added, from either end.
  for (TaskId v = 0; v < g.size(); ++v) {
    for (const auto e : boost::make_iterator_range(boost::in_edges(task_vertex(v), g.dependencies()))) {
      const Pair added = kAdded.at(g.dependencies()[e]);
      EXPECT_EQ(added, Pair(boost::source(e, g.dependencies()), v));
    }
    for (const auto e : boost::make_iterator_range(boost::out_edges(task_vertex(v), g.dependencies()))) {
      const Pair added = kAdded.at(g.dependencies()[e]);
      EXPECT_EQ(added, Pair(v, boost::target(e, g.dependencies())));
    }
  }
  EXPECT_DOUBLE_EQ(g[4].duration_s, 5);
}

// seal() fills the rows itself: they are what Boost's constructor from
// the unsorted edges makes (out-edges by source in the order added, each
// with its position), with each task's in-edges put in the order added.
TEST(TaskGraph, SealedRowsAreBoostsWithEachInEdgeRowInTheOrderAdded) {
  constexpr std::uint32_t kTasks = 300;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> added;
  std::uint64_t state = 12345;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (int k = 0; k < 3000; ++k)
    added.emplace_back(next() % kTasks, next() % (kTasks / 3));  // rows of many in-edges, repeats
  TaskGraph g;
  for (std::uint32_t k = 0; k < kTasks; ++k)
    g.add({});
  for (const auto& [before, after] : added)
    g.depend(before, after);
  g.seal();
  const GraphStorage boost_rows(boost::edges_are_unsorted_multi_pass, added.begin(), added.end(),
                                boost::counting_iterator<DependencyPosition>(0), kTasks);
  const auto& rows = g.dependencies();
  EXPECT_EQ(rows.m_forward.m_rowstart, boost_rows.m_forward.m_rowstart);
  EXPECT_EQ(rows.m_forward.m_column, boost_rows.m_forward.m_column);
  EXPECT_EQ(rows.m_forward.m_edge_properties, boost_rows.m_forward.m_edge_properties);
  EXPECT_EQ(rows.m_backward.m_rowstart, boost_rows.m_backward.m_rowstart);
  for (std::uint32_t v = 0; v < kTasks; ++v) {
    // Boost's in-edges by source, as (position, source, forward edge);
    // sealed, the same by position.
    using InEdge = std::tuple<DependencyPosition, std::uint32_t, std::uint32_t>;
    const auto row = [&](const GraphStorage& s) {
      std::vector<InEdge> out;
      for (auto k = s.m_backward.m_rowstart[v]; k < s.m_backward.m_rowstart[v + 1]; ++k)
        out.emplace_back(s.m_forward.m_edge_properties[s.m_backward.m_edge_properties[k]],
                         s.m_backward.m_column[k], s.m_backward.m_edge_properties[k]);
      return out;
    };
    std::vector<InEdge> expected = row(boost_rows);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(row(rows), expected) << "task " << v;
  }
}

TEST(TaskGraph, WalksEveryDependencyInTheOrderAddedInAnyWindowSize) {
  const TaskGraph g = five_tasks();
  for (std::size_t window :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{8}, std::size_t{1} << 22}) {
    std::vector<Pair> walked;
    g.for_each_dependency_in_order([&](TaskId a, TaskId b) { walked.emplace_back(a, b); }, window);
    EXPECT_EQ(walked, kAdded) << "window " << window;
  }
}

TEST(TaskGraph, ReadingBeforeSealOrAddingAfterIsAnInternalError) {
  TaskGraph g;
  const TaskId a = g.add({}), b = g.add({});
  g.depend(a, b);
  EXPECT_THROW(g.dependencies(), std::logic_error);
  EXPECT_THROW(g.depend(a, 2), std::logic_error);  // no task 2
  g.seal();
  EXPECT_TRUE(g.sealed());
  EXPECT_THROW(g.add({}), std::logic_error);
  EXPECT_THROW(g.depend(b, a), std::logic_error);
  EXPECT_THROW(g.seal(), std::logic_error);
  g[a].duration_s = 2;  // tasks' fields stay writable
  EXPECT_DOUBLE_EQ(g[a].duration_s, 2);
  EXPECT_EQ(boost::num_edges(g.dependencies()), 1u);
}

TEST(TaskGraph, SealedHoldsTheTasksAndSixteenBytesPerDependency) {
  // Tasks in one vector (104 B each), two offset arrays of 4 B per task,
  // and per dependency its target, its source, the forward edge index of
  // the in-edge and its position (4 B each): what docs/performance.md
  // counts per task.
  TaskGraph g;
  constexpr std::size_t kTasks = 1000;
  for (std::size_t k = 0; k < kTasks; ++k)
    g.add({});
  for (std::size_t k = 0; k + 1 < kTasks; ++k) {
    g.depend(k, k + 1);
    g.depend(0, k + 1);
  }
  g.seal();
  const std::size_t edges = 2 * (kTasks - 1);
  const std::size_t tasks_capacity = 1024;  // the vector's doublings
  EXPECT_EQ(g.structure_bytes(), tasks_capacity * sizeof(Task) + 2 * 4 * (kTasks + 1) + 16 * edges);
}

TEST(TaskGraph, ReservedCountsAreHeldExactlyAndCountedBack) {
  // What the builder reserves at scale (workloads::GraphCounts): the tasks'
  // vector then holds exactly the tasks, not the next power of two.
  constexpr std::size_t kTasks = 1000;
  TaskGraph g;
  g.reserve({.tasks = kTasks, .dependencies = kTasks - 1, .memory_events = kTasks});
  for (std::size_t k = 0; k < kTasks; ++k) {
    g.add({});
    g.add_memory(k, 0, MemoryEvent::At::start, MemoryKind::activations, 1.0);
  }
  for (std::size_t k = 0; k + 1 < kTasks; ++k)
    g.depend(k, k + 1);
  EXPECT_EQ(g.counts(), (GraphCounts{kTasks, kTasks - 1, kTasks}));
  EXPECT_EQ(g.memory.capacity(), kTasks);
  g.seal();
  EXPECT_EQ(g.counts(), (GraphCounts{kTasks, kTasks - 1, kTasks}));
  EXPECT_EQ(g.structure_bytes(), kTasks * sizeof(Task) + 2 * 4 * (kTasks + 1) + 16 * (kTasks - 1));
  EXPECT_THROW(g.reserve({}), std::logic_error);
}

// A block copied onto other GPUs (what the builder does for a replica alike
// to one built): the copies follow the graph's end in the order added, ids
// and group indices shifted, every GPU mapped; a block that is not closed
// is refused.
TEST(TaskGraph, ACopiedBlockIsAddedShiftedOntoTheImageGpusInTheOrderAdded) {
  TaskGraph g;
  g.gpu_count = 4;
  Task first;  // a task before the block, which the copy must not touch
  first.gpu = 3;
  g.add(first);
  const TaskGraph::Mark begin = g.mark();
  const int group = g.add_group({0, 1});
  Task a, b;
  a.gpu = 0;
  a.duration_s = 1;
  b.kind = TaskKind::collective;
  b.group = group;
  b.bytes = 8;
  const TaskId ia = g.add(a), ib = g.add(b);
  g.depend(ib, ia);
  g.add_memory(ia, 0, MemoryEvent::At::end, MemoryKind::activations, -5);
  g.add_memory(ib, 1, MemoryEvent::At::start, MemoryKind::buffers, 7);
  const TaskGraph::Mark end = g.mark();
  g.append_image(begin, end, {2, 3, -1, -1});
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g[3].gpu, 2);
  EXPECT_EQ(g[3].duration_s, 1);
  EXPECT_EQ(g[4].group, 1);
  EXPECT_EQ(g.groups[1], (std::vector<int>{2, 3}));
  ASSERT_EQ(g.memory.size(), 4u);
  EXPECT_EQ(g.memory[2].task, 3u);
  EXPECT_EQ(g.memory[2].gpu, 2);
  EXPECT_EQ(g.memory[2].bytes, -5);
  EXPECT_EQ(g.memory[3].task, 4u);
  EXPECT_EQ(g.memory[3].gpu, 3);
  // A dependency leaving the block, or a GPU the image does not map.
  TaskGraph open = g;
  const TaskGraph::Mark from = open.mark();
  Task c;
  c.gpu = 0;
  open.depend(0, open.add(c));
  EXPECT_THROW(open.append_image(from, open.mark(), {1, -1, -1, -1}), std::logic_error);
  TaskGraph unmapped = g;
  EXPECT_THROW(unmapped.append_image(begin, end, {2, -1, -1, -1}), std::logic_error);
  g.seal();
  std::vector<std::pair<TaskId, TaskId>> order;
  g.for_each_dependency_in_order([&](TaskId u, TaskId v) { order.emplace_back(u, v); });
  EXPECT_EQ(order, (std::vector<std::pair<TaskId, TaskId>>{{2, 1}, {4, 3}}));
}

// seal() groups the memory events by task keeping their order within a
// task, whether they came nearly in order (an insertion sort places them)
// or far from it (past its budget of moves a stable sort finishes).
TEST(TaskGraph, SealGroupsMemoryEventsByTaskInTheOrderAddedWhateverTheirDisorder) {
  for (const bool reversed : {false, true}) {
    TaskGraph g;
    g.gpu_count = 1;
    Task t;
    t.gpu = 0;
    const std::size_t n = 64;
    for (std::size_t k = 0; k < n; ++k)
      g.add(t);
    std::vector<MemoryEvent> added;
    for (std::size_t k = 0; k < 4 * n; ++k) {
      // Nearly in order (each task's events a few places late), or reversed.
      const TaskId task = reversed ? n - 1 - k % n : (k / 4 + (k % 3 == 0 ? 2 : 0)) % n;
      g.add_memory(task, 0, MemoryEvent::At::start, MemoryKind::activations, static_cast<double>(k + 1));
      added.push_back(g.memory.back());
    }
    std::stable_sort(added.begin(), added.end(),
                     [](const MemoryEvent& a, const MemoryEvent& b) { return a.task < b.task; });
    g.seal();
    ASSERT_EQ(g.memory.size(), added.size());
    for (std::size_t k = 0; k < added.size(); ++k) {
      EXPECT_EQ(g.memory[k].task, added[k].task);
      EXPECT_EQ(g.memory[k].bytes, added[k].bytes);
    }
    for (TaskId task = 0; task < n; ++task)
      for (std::uint32_t k = g[task].memory_begin; k < g[task].memory_end; ++k)
        EXPECT_EQ(g.memory[k].task, task);
  }
}

}  // namespace
}  // namespace trainsim::workloads
