// DualPipe-V against deepseek-ai/DualPipe dualpipev.py (DualPipeV.step):
// the expected lists follow its eight steps, with the WeightGradStore FIFO
// deciding which weight pass each W runs. Letters: F forward, B full
// backward, I input gradient, W weight gradient; ".1" the second chunk.
#include <gtest/gtest.h>

#include "support/schedule_checks.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

using testing::rank_texts;

TEST(DualPipeV, MatchesTheReferenceOpByOpForFourRanksEightMicroBatches) {
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F2.1 I2.1 W2.1 F3.1 F7.0 B3.1 F4.1 "
      "B0.0 "
      "B4.1 F5.1 B1.0 B5.1 F6.1 B2.0 B6.1 F7.1 B3.0 B7.1 I4.0 W4.0 I5.0 W5.0 I6.0 W6.0 I7.0 W7.0",
      "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F5.0 F1.1 I0.1 W0.1 F2.1 I1.1 W1.1 F3.1 F6.0 B2.1 F4.1 B0.0 F7.0 B3.1 "
      "F5.1 "
      "B1.0 B4.1 F6.1 B2.0 B5.1 F7.1 B3.0 B6.1 B4.0 I7.1 I5.0 W7.1 I6.0 W5.0 I7.0 W6.0 W7.0",
      "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 I0.1 W0.1 F3.1 F5.0 B1.1 F4.1 B0.0 F6.0 B2.1 F5.1 B1.0 F7.0 "
      "B3.1 "
      "F6.1 B2.0 B4.1 F7.1 B3.0 B5.1 B4.0 B6.1 I5.0 I7.1 I6.0 W5.0 I7.0 W7.1 W6.0 W7.0",
      "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 F3.0 F3.1 F4.0 B0.1 F4.1 B0.0 F5.0 B1.1 F5.1 B1.0 F6.0 B2.1 F6.1 B2.0 "
      "F7.0 "
      "B3.1 F7.1 B3.0 B4.1 B4.0 B5.1 B5.0 I6.1 I6.0 I7.1 I7.0 W6.1 W6.0 W7.1 W7.0",
  };
  const auto s = make_dualpipe_v(4, 8);
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.placement, ChunkPlacement::v_shape);
  EXPECT_EQ(rank_texts(s), expected);
}

TEST(DualPipeV, MatchesTheReferenceOpByOpForTwoRanksFiveMicroBatches) {
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 F3.0 B1.1 F2.1 B0.0 F4.0 B2.1 F3.1 B1.0 B3.1 F4.1 B2.0 B4.1 I3.0 "
      "W3.0 "
      "I4.0 W4.0",
      "F0.0 F0.1 F1.0 F1.1 F2.0 B0.1 F2.1 B0.0 F3.0 B1.1 F3.1 B1.0 F4.0 B2.1 F4.1 B2.0 B3.1 B3.0 I4.1 I4.0 "
      "W4.1 "
      "W4.0",
  };
  EXPECT_EQ(rank_texts(make_dualpipe_v(2, 5)), expected);
}

// The pairs of the main step run overlapped: the backward of each pair is
// marked, and always follows a forward of the other chunk.
TEST(DualPipeV, OverlappedPairsAreMarkedOnTheirBackward) {
  const auto s = make_dualpipe_v(4, 8);
  int pairs = 0;
  for (const auto& ops : s.per_rank)
    for (std::size_t k = 0; k < ops.size(); ++k)
      if (ops[k].paired) {
        ++pairs;
        ASSERT_GT(k, 0u);
        EXPECT_EQ(ops[k - 1].kind, PipeOpKind::forward);
        EXPECT_NE(ops[k - 1].chunk, ops[k].chunk);
      }
  // Steps 4 and 5: rank r runs 2 (m - 2p + r + 1) + (p - r - 1) pairs, the
  // last rank one fewer (its first pair is not overlapped).
  int expected = 0;
  for (int r = 0; r < 4; ++r)
    expected += 2 * (8 - 8 + r + 1) + (4 - r - 1) - (r == 3 ? 1 : 0);
  EXPECT_EQ(pairs, expected);
}

TEST(DualPipeV, EveryListIsCompleteAndRunsWithoutDeadlock) {
  for (int p : {1, 2, 3, 4, 8})
    for (int extra : {0, 1, 3, 9}) {
      const auto s = make_dualpipe_v(p, 2 * p + extra);
      EXPECT_EQ(testing::op_count_problem(s), "") << p << " " << extra;
      EXPECT_TRUE(testing::runs_to_completion(s)) << p << " " << extra;
    }
}

TEST(DualPipeV, NeedsTwiceAsManyMicroBatchesAsRanks) {
  EXPECT_THROW(make_dualpipe_v(4, 7), std::invalid_argument);
  EXPECT_NO_THROW(make_dualpipe_v(4, 8));
}

}  // namespace
}  // namespace trainsim::workloads
