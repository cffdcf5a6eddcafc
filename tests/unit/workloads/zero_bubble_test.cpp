// The zero-bubble family (Qi et al., ICLR 2024) against the authors' code:
// ZB-H1 from their DeepSpeed ZeroBubbleH1Pipeline.steps(), ZB-H2 from the
// schedule drawn in zb.py (quoted in ../shared/reference/schedules.md), ZB-V
// from zbv.py's PipelineGraph.create_schedule run on the same inputs.
// Letters: F forward, B full backward, I input gradient, W weight gradient.
#include <gtest/gtest.h>

#include "support/schedule_checks.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

using testing::rank_texts;

TEST(ZbH1, MatchesTheAuthorsScheduleOpByOpForFourStagesEightMicroBatches) {
  const std::vector<std::string> expected = {
      "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
      "F0 F1 F2 I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7",
      "F0 F1 I0 F2 I1 F3 I2 W0 F4 I3 W1 F5 I4 W2 F6 I5 W3 F7 I6 W4 I7 W5 W6 W7",
      "F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7",
  };
  EXPECT_EQ(rank_texts(make_zb_h1(4, 8)), expected);
}

TEST(ZbH1, FewerMicroBatchesThanStagesFollowsTheSameSections) {
  const std::vector<std::string> expected = {
      "F0 F1 F2 B0 B1 B2",
      "F0 F1 F2 I0 I1 W0 I2 W1 W2",
      "F0 F1 I0 F2 I1 I2 W0 W1 W2",
      "F0 I0 F1 I1 F2 I2 W0 W1 W2",
  };
  EXPECT_EQ(rank_texts(make_zb_h1(4, 3)), expected);
}

// Stage 0 never splits its backward (nothing waits for its input
// gradient), so its list is 1F1B's.
TEST(ZbH1, FirstStageRunsOneFOneB) {
  const auto zb = make_zb_h1(6, 13), ofob = make_one_f_one_b(6, 13);
  EXPECT_EQ(zb.per_rank[0], ofob.per_rank[0]);
}

// The reference strings, one character per op, for p = 4 and m = 12.
TEST(ZbH2, MatchesTheReferenceStringsForFourStages) {
  const std::vector<std::string> reference = {
      "fffffffbfbfbfbfbfbwbwbwbwbwbwbwwwwww",
      "fffffbfbfbfbfbfbfbfbwbwbwbwbwwwwwwww",
      "fffbfbfbfbfbfbfbfbfbfbwbwbwwwwwwwwww",
      "fbfbfbfbfbfbfbfbfbfbfbfbwwwwwwwwwwww",
  };
  const auto s = make_zb_h2(4, 12);
  for (int r = 0; r < 4; ++r) {
    std::string letters;
    for (const auto& op : s.per_rank[r])
      letters += op.kind == PipeOpKind::forward ? 'f' : op.kind == PipeOpKind::backward_input ? 'b' : 'w';
    EXPECT_EQ(letters, reference[r]) << "rank " << r;
  }
  // Micro-batches in order for each kind (W pops the oldest pending one).
  EXPECT_EQ(rank_texts(s)[0],
            "F0 F1 F2 F3 F4 F5 F6 I0 F7 I1 F8 I2 F9 I3 F10 I4 F11 I5 W0 I6 W1 I7 W2 I8 W3 I9 W4 I10 W5 I11 "
            "W6 W7 W8 "
            "W9 W10 W11");
}

// ZB-H2 keeps up to 2p - 1 micro-batches in flight on stage 0 (from a
// forward to its input gradient, which frees most of the activations).
TEST(ZbH2, StageZeroHoldsTwoPMinusOneMicroBatches) {
  for (int p : {2, 4, 8}) {
    const auto s = make_zb_h2(p, 4 * p);
    int in_flight = 0, peak = 0;
    for (const auto& op : s.per_rank[0]) {
      in_flight += op.kind == PipeOpKind::forward ? 1 : op.kind == PipeOpKind::backward_input ? -1 : 0;
      peak = std::max(peak, in_flight);
    }
    EXPECT_EQ(peak, 2 * p - 1) << p;
  }
}

TEST(ZbV, MatchesTheReferenceGeneratorForFourRanksEightMicroBatches) {
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F2.1 I2.1 W2.1 F3.1 I3.1 W3.1 F7.0 "
      "I0.0 "
      "W0.0 F4.1 I4.1 W4.1 I1.0 W1.0 F5.1 I5.1 W5.1 I2.0 W2.0 F6.1 I6.1 W6.1 I3.0 W3.0 F7.1 I7.1 I4.0 W7.1 "
      "I5.0 "
      "W4.0 I6.0 W5.0 I7.0 W6.0 W7.0",
      "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F5.0 F1.1 I0.1 W0.1 F2.1 I1.1 W1.1 F3.1 I2.1 W2.1 F6.0 I0.0 W0.0 F4.1 "
      "I3.1 "
      "W3.1 F7.0 I1.0 W1.0 F5.1 I4.1 W4.1 I2.0 W2.0 F6.1 I5.1 W5.1 I3.0 W3.0 F7.1 I6.1 I4.0 I7.1 I5.0 W6.1 "
      "I6.0 "
      "W4.0 I7.0 W7.1 W5.0 W6.0 W7.0",
      "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 I0.1 W0.1 F3.1 I1.1 W1.1 F5.0 I0.0 W0.0 F4.1 I2.1 W2.1 F6.0 "
      "I1.0 "
      "W1.0 F5.1 I3.1 W3.1 F7.0 I2.0 W2.0 F6.1 I4.1 W4.1 I3.0 W3.0 F7.1 I5.1 I4.0 I6.1 I5.0 I7.1 I6.0 W5.1 "
      "I7.0 "
      "W4.0 W6.1 W5.0 W7.1 W6.0 W7.0",
      "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 F3.0 F3.1 I0.1 W0.1 F4.0 I0.0 W0.0 F4.1 I1.1 W1.1 F5.0 I1.0 W1.0 F5.1 "
      "I2.1 "
      "W2.1 F6.0 I2.0 W2.0 F6.1 I3.1 W3.1 F7.0 I3.0 W3.0 F7.1 I4.1 I4.0 I5.1 I5.0 I6.1 I6.0 I7.1 I7.0 W4.1 "
      "W4.0 "
      "W5.1 W5.0 W6.1 W6.0 W7.1 W7.0",
  };
  const auto s = make_zb_v(4, 8);  // the reference's own test setting
  EXPECT_EQ(s.placement, ChunkPlacement::v_shape);
  EXPECT_EQ(rank_texts(s), expected);
}

// The greedy follows the costs: with a slow B, a fast W and a transfer time
// it places W differently (zbv.py on the same inputs gives these lists).
TEST(ZbV, MatchesTheReferenceGeneratorWithUnevenCosts) {
  ZbvInputs in;
  in.forward_s = 1;
  in.backward_input_s = 2;
  in.backward_weight_s = 0.5;
  in.comm_s = 0.1;
  const auto s = make_zb_v(4, 8, in);
  EXPECT_EQ(
      rank_texts(s)[0],
      "F0.0 F1.0 F2.0 F3.0 F4.0 F5.0 F6.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F2.1 I2.1 W2.1 F3.1 I3.1 W3.1 F7.0 "
      "I0.0 "
      "W0.0 F4.1 I4.1 W4.1 I1.0 F5.1 I5.1 W1.0 W5.1 I2.0 F6.1 I6.1 W2.0 W6.1 I3.0 F7.1 I7.1 W3.0 I4.0 W7.1 "
      "W4.0 I5.0 W5.0 I6.0 W6.0 I7.0 W7.0");
  EXPECT_EQ(
      rank_texts(s)[2],
      "F0.0 F1.0 F2.0 F0.1 F3.0 F1.1 F4.0 F2.1 I0.1 W0.1 F3.1 I1.1 W1.1 F5.0 I0.0 W0.0 F4.1 I2.1 W2.1 F6.0 "
      "I1.0 "
      "W1.0 F5.1 I3.1 W3.1 F7.0 I2.0 W2.0 F6.1 I4.1 W4.1 I3.0 F7.1 I5.1 W3.0 I4.0 I6.1 I5.0 I7.1 I6.0 W5.1 "
      "W4.0 W6.1 W5.0 I7.0 W7.1 W6.0 W7.0");
}

// ZB-V keeps 1F1B's activation memory: at most 2p chunk forwards (p
// micro-batches' worth) between a forward and its input gradient on any
// rank, the cap its greedy enforces.
TEST(ZbV, NoRankHoldsMoreThanTwoPChunkActivations) {
  for (int p : {2, 4, 8}) {
    const auto s = make_zb_v(p, 3 * p);
    for (int r = 0; r < p; ++r) {
      int alive = 0, peak = 0;
      for (const auto& op : s.per_rank[r]) {
        alive += op.kind == PipeOpKind::forward ? 1 : op.kind == PipeOpKind::backward_input ? -1 : 0;
        peak = std::max(peak, alive);
      }
      EXPECT_LE(peak, 2 * p) << "p=" << p << " rank " << r;
    }
  }
}

TEST(ZeroBubble, EveryListIsCompleteAndRunsWithoutDeadlock) {
  for (int p : {1, 2, 3, 4, 8})
    for (int m : {1, 2, 3, 5, 8, 16, 17}) {
      for (const auto& s : {make_zb_h1(p, m), make_zb_h2(p, m), make_zb_v(p, m)}) {
        EXPECT_EQ(testing::op_count_problem(s), "") << "p=" << p << " m=" << m << " chunks=" << s.chunks;
        EXPECT_TRUE(testing::runs_to_completion(s)) << "p=" << p << " m=" << m << " chunks=" << s.chunks;
      }
    }
}

}  // namespace
}  // namespace trainsim::workloads
