// The replay's compact per-task index and per-GPU queue
// (sim/replay/replayed_index.hpp, sim/replay/task_fifo.hpp): each must
// answer what the 32-bit index per task and std::deque answered.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

#include "sim/replay/replayed_index.hpp"
#include "sim/replay/task_fifo.hpp"

namespace trainsim::sim {
namespace {

TEST(ReplayedIndex, EachReplayedTaskGetsItsRankAmongTheReplayedTasks) {
  std::mt19937_64 random(7);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64},
                              std::size_t{65}, std::size_t{1000}, std::size_t{4099}}) {
    std::vector<char> replayed(n);
    for (auto& r : replayed)
      r = static_cast<char>(random() % 3 == 0);
    if (n > 0)
      replayed.back() = 1;
    const ReplayedIndex index(replayed);
    EXPECT_EQ(index.empty(), n == 0);
    std::size_t rank = 0;
    for (std::size_t id = 0; id < n; ++id) {
      if (replayed[id]) {
        EXPECT_EQ(index[id], rank++) << "task " << id << " of " << n;
      }
    }
  }
}

TEST(ReplayedIndex, EveryTaskReplayedIsItsOwnRank) {
  const ReplayedIndex index(std::vector<char>(200, 1));
  for (std::size_t id = 0; id < 200; ++id)
    EXPECT_EQ(index[id], id);
}

TEST(TaskFifo, PopsInTheOrderPushedAcrossCompactionsLikeADeque) {
  std::mt19937_64 random(11);
  TaskFifo fifo;
  std::deque<workloads::TaskId> expected;
  workloads::TaskId next = 0;
  for (int step = 0; step < 20000; ++step) {
    // Pushes outnumber pops for a while (the front is then compacted with
    // items behind it), then the queue drains.
    const bool push = step < 15000 ? random() % 5 < 3 : random() % 5 == 0;
    if (push || expected.empty()) {
      fifo.push_back(next);
      expected.push_back(next++);
    } else {
      ASSERT_FALSE(fifo.empty());
      ASSERT_EQ(fifo.front(), expected.front());
      fifo.pop_front();
      expected.pop_front();
    }
    ASSERT_EQ(fifo.empty(), expected.empty());
  }
  while (!expected.empty()) {
    ASSERT_EQ(fifo.front(), expected.front());
    fifo.pop_front();
    expected.pop_front();
  }
  EXPECT_TRUE(fifo.empty());
}

}  // namespace
}  // namespace trainsim::sim
