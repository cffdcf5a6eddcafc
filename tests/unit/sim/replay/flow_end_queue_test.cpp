// FlowEndQueue (sim/replay/flow_end_queue.hpp) pops what a binary min-heap of
// (end, flow index) pops, in the same order, however its flows are pushed:
// into lanes by their date's terms, out of a lane's order, beyond its lanes,
// or straight to its heap.
#include <gtest/gtest.h>

#include <functional>
#include <queue>
#include <random>
#include <vector>

#include "sim/replay/flow_end_queue.hpp"

namespace trainsim::sim {
namespace {

using Entry = FlowEndQueue::Entry;
using Heap = std::priority_queue<Entry, std::vector<Entry>, std::greater<>>;

// As the isolated runner uses it: flows start at 0 or at the end just
// popped, each dated (start + latency) + moving from one of `terms` pairs;
// every `resumed`-th push goes straight to the heap with an arbitrary end,
// as IsolatedRunner::resume pushes the flows it finds in flight.
void expect_heap_order(int terms, int resumed, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::pair<double, double>> pairs;
  std::uniform_real_distribution<double> term(1e-7, 3e-3);
  for (int k = 0; k < terms; ++k)
    pairs.emplace_back(term(random), term(random));
  FlowEndQueue queue;
  Heap heap;
  std::uint32_t flows = 0;
  const auto launch = [&](double start_s) {
    const auto& [latency, moving] = pairs[random() % pairs.size()];
    const Entry entry{(start_s + latency) + moving, flows++};
    if (resumed > 0 && flows % static_cast<std::uint32_t>(resumed) == 0) {
      const Entry any{start_s + term(random), entry.second};
      queue.push(any);
      heap.push(any);
      return;
    }
    queue.push(entry, latency, moving);
    heap.push(entry);
  };
  for (int k = 0; k < 40; ++k)
    launch(0.0);
  int popped = 0;
  while (!heap.empty()) {
    ASSERT_FALSE(queue.empty());
    EXPECT_EQ(queue.top(), heap.top());
    const Entry entry = queue.pop();
    ASSERT_EQ(entry, heap.top()) << popped;
    heap.pop();
    ++popped;
    // 0 to 2 flows released at each end, at least one while few wait.
    if (flows < 5000)
      for (int k = static_cast<int>(random() % 3 + (heap.size() < 20 ? 1 : 0)); k > 0; --k)
        launch(entry.first);
  }
  EXPECT_TRUE(queue.empty());
  EXPECT_GT(popped, 4000);
}

TEST(FlowEndQueue, PopsWhatAHeapPopsForFlowsOfOneDuration) {
  expect_heap_order(1, 0, 1);
}

TEST(FlowEndQueue, PopsWhatAHeapPopsForMoreDurationsThanLanes) {
  for (unsigned seed = 1; seed <= 5; ++seed)
    expect_heap_order(7, 0, seed);
}

TEST(FlowEndQueue, PopsWhatAHeapPopsWithResumedFlowsOnItsHeap) {
  for (unsigned seed = 1; seed <= 5; ++seed)
    expect_heap_order(3, 5, seed);
}

TEST(FlowEndQueue, EqualEndsPopInTheOrderOfTheirIndices) {
  FlowEndQueue queue;
  queue.push({2.0, 3}, 1.0, 1.0);
  queue.push({2.0, 1});
  queue.push({2.0, 0}, 0.5, 1.5);
  queue.push({2.0, 4}, 1.0, 1.0);
  queue.push({1.0, 9});
  EXPECT_EQ(queue.pop(), Entry(1.0, 9));
  EXPECT_EQ(queue.pop(), Entry(2.0, 0));
  EXPECT_EQ(queue.pop(), Entry(2.0, 1));
  EXPECT_EQ(queue.pop(), Entry(2.0, 3));
  EXPECT_EQ(queue.pop(), Entry(2.0, 4));
  EXPECT_TRUE(queue.empty());
}

TEST(FlowEndQueue, AFlowThatWouldUnsortItsLaneWaitsOnTheHeap) {
  FlowEndQueue queue;
  // The same terms, the second from an earlier start: it ends first.
  queue.push({5.0 + 1.0, 0}, 0.25, 0.75);
  queue.push({3.0 + 1.0, 1}, 0.25, 0.75);
  queue.push({6.0 + 1.0, 2}, 0.25, 0.75);
  EXPECT_EQ(queue.pop(), Entry(4.0, 1));
  EXPECT_EQ(queue.pop(), Entry(6.0, 0));
  queue.clear();
  EXPECT_TRUE(queue.empty());
  queue.push({1.0, 0}, 0.5, 0.5);
  EXPECT_EQ(queue.pop(), Entry(1.0, 0));
}

}  // namespace
}  // namespace trainsim::sim
