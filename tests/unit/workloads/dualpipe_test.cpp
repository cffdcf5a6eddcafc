// DualPipe against deepseek-ai/DualPipe dualpipe.py (DualPipe.step): the
// expected lists follow its eight steps by hand for rank r with h =
// min(r, p - 1 - r), chunk = phase ^ (r >= p/2), the middle ranks p/2 - 1
// and p/2 running their first main-step pair unoverlapped, and the
// WeightGradStore FIFO deciding which weight pass each W runs. Letters: F
// forward, B full backward, I input gradient, W weight gradient; ".0" the
// down direction (fed at rank 0), ".1" the up direction (fed at rank
// p - 1); "*" a backward overlapped with the forward before it (F&B).
#include <gtest/gtest.h>

#include "support/schedule_checks.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

using testing::rank_texts;

// The lists with each paired backward starred.
std::vector<std::string> paired_texts(const PipelineSchedule& s) {
  std::vector<std::string> out;
  for (const auto& ops : s.per_rank) {
    std::string text;
    for (const auto& op : ops) {
      if (!text.empty())
        text += ' ';
      text += to_string({op}, s.chunks);
      if (op.paired)
        text += '*';
    }
    out.push_back(text);
  }
  return out;
}

// p = 4, m = 8: m/2 = 4 micro-batches each way. Rank 0 (h = 0): step 1
// F0 F0, step 2 F0 F1, step 3 I1 W F1, step 4 once F0&B1 F1&B0, step 5 B1
// F1&B0, step 6 B1 then I0 (even h: zero bubble from B0 of index 0), step 7
// W I0, step 8 W. Rank 1 (h = 1, middle): step 2 twice F0 F1, step 4 twice
// (the first F0 then B1 unpaired), step 6 B1 B0 then I1 I0 (odd h: from B1
// of index 1), step 8 W W. Ranks 2 and 3 mirror 1 and 0 with the chunks
// swapped.
TEST(DualPipe, MatchesTheReferenceOpByOpForFourRanksEightMicroBatches) {
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 F3.0 B1.1* F2.1 B0.0* B2.1 F3.1 B1.0* B3.1 I2.0 W2.0 I3.0 W3.0",
      "F0.0 F0.1 F1.0 F1.1 F2.0 B0.1 F2.1 B0.0* F3.0 B1.1* F3.1 B1.0* B2.1 B2.0 I3.1 I3.0 W3.1 W3.0",
      "F0.1 F0.0 F1.1 F1.0 F2.1 B0.0 F2.0 B0.1* F3.1 B1.0* F3.0 B1.1* B2.0 B2.1 I3.0 I3.1 W3.0 W3.1",
      "F0.1 F1.1 F2.1 F0.0 I0.0 W0.0 F1.0 F3.1 B1.0* F2.0 B0.1* B2.0 F3.0 B1.1* B3.0 I2.1 W2.1 I3.1 W3.1",
  };
  const auto s = make_dualpipe(4, 8);
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.placement, ChunkPlacement::bidirectional);
  EXPECT_EQ(s.micro_batches_of_chunk(), 4);
  EXPECT_EQ(paired_texts(s), expected);
}

// p = 4, m = 10: one more main-step iteration on every rank.
TEST(DualPipe, MatchesTheReferenceOpByOpForFourRanksTenMicroBatches) {
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 F3.0 B1.1* F2.1 B0.0* F4.0 B2.1* F3.1 B1.0* B3.1 F4.1 B2.0* B4.1 "
      "I3.0 W3.0 I4.0 W4.0",
      "F0.0 F0.1 F1.0 F1.1 F2.0 B0.1 F2.1 B0.0* F3.0 B1.1* F3.1 B1.0* F4.0 B2.1* F4.1 B2.0* B3.1 B3.0 I4.1 "
      "I4.0 W4.1 W4.0",
      "F0.1 F0.0 F1.1 F1.0 F2.1 B0.0 F2.0 B0.1* F3.1 B1.0* F3.0 B1.1* F4.1 B2.0* F4.0 B2.1* B3.0 B3.1 I4.0 "
      "I4.1 W4.0 W4.1",
      "F0.1 F1.1 F2.1 F0.0 I0.0 W0.0 F1.0 F3.1 B1.0* F2.0 B0.1* F4.1 B2.0* F3.0 B1.1* B3.0 F4.0 B2.1* B4.0 "
      "I3.1 W3.1 I4.1 W4.1",
  };
  EXPECT_EQ(paired_texts(make_dualpipe(4, 10)), expected);
}

// Rank r holds stage r of the down direction and stage p - 1 - r of the up
// one: the V-shape's ranks, but each direction ends on its own last stage.
TEST(DualPipe, EachRankHoldsOneStageOfEachDirection) {
  const auto s = make_dualpipe(4, 8);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.virtual_stage(r, 0), r);
    EXPECT_EQ(s.virtual_stage(r, 1), 4 + (4 - 1 - r));
    EXPECT_EQ(s.rank_of(s.virtual_stage(r, 1)), r);
  }
  EXPECT_TRUE(s.is_first_stage(0));
  EXPECT_TRUE(s.is_last_stage(3));
  EXPECT_TRUE(s.is_first_stage(4));
  EXPECT_TRUE(s.is_last_stage(7));
  EXPECT_FALSE(s.is_last_stage(4));
  EXPECT_EQ(s.rank_of(4), 3);  // the up direction is fed at the last rank
  EXPECT_EQ(s.rank_of(7), 0);  // and turns around on the first
}

TEST(DualPipe, EveryListIsCompleteAndRunsWithoutDeadlock) {
  for (int p : {2, 4, 6, 8})
    for (int extra : {0, 2, 4, 10}) {
      const auto s = make_dualpipe(p, 2 * p + extra);
      EXPECT_EQ(testing::op_count_problem(s), "") << p << " " << extra;
      EXPECT_TRUE(testing::runs_to_completion(s)) << p << " " << extra;
    }
}

// The reference's asserts: num_ranks % 2 == 0, num_chunks % 2 == 0 and
// num_chunks >= num_ranks * 2.
TEST(DualPipe, NeedsEvenRanksAndAnEvenCountOfAtLeastTwiceAsManyMicroBatches) {
  EXPECT_THROW(make_dualpipe(3, 12), std::invalid_argument);
  EXPECT_THROW(make_dualpipe(4, 9), std::invalid_argument);
  EXPECT_THROW(make_dualpipe(4, 6), std::invalid_argument);
  EXPECT_NO_THROW(make_dualpipe(4, 8));
  EXPECT_NO_THROW(make_dualpipe(2, 4));
}

// DualPipe-V's lists did not change when its bookkeeping moved to the
// helper both generators share (dualpipe_op_list.hpp): its first rank for
// p = 2, m = 5, as pinned in dualpipe_v_test.cpp.
TEST(DualPipe, SharesItsOpBookkeepingWithDualPipeV) {
  EXPECT_EQ(
      rank_texts(make_dualpipe_v(2, 5))[0],
      "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 F3.0 B1.1 F2.1 B0.0 F4.0 B2.1 F3.1 B1.0 B3.1 F4.1 B2.0 B4.1 I3.0 "
      "W3.0 I4.0 W4.0");
  EXPECT_EQ(make_schedule(ScheduleKind::dualpipe, 4, 8).per_rank, make_dualpipe(4, 8).per_rank);
  EXPECT_EQ(to_string(ScheduleKind::dualpipe), "dualpipe");
}

}  // namespace
}  // namespace trainsim::workloads
