// Interleaved 1F1B against Megatron-LM's forward_backward_pipelining_with_
// interleaving: the expected lists come from its warm-up / steady / cool-down
// loops over get_schedule_table, replayed with its per-chunk activation
// FIFOs deciding which micro-batch each backward takes.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/schedule_checks.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

using testing::rank_texts;

TEST(InterleavedOneFOneB, MatchesMegatronOpByOpForFourRanksEightMicroBatchesTwoChunks) {
  const auto s = make_interleaved_one_f_one_b(4, 8, 2);
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.placement, ChunkPlacement::looped);
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 "
      "F7.1 "
      "B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 F4.1 B0.0 F5.1 B1.0 "
      "F6.1 "
      "B2.0 F7.1 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 F7.0 B1.0 F4.1 B2.0 "
      "F5.1 "
      "B3.0 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
      "F4.1 "
      "B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0",
  };
  EXPECT_EQ(rank_texts(s), expected);
}

TEST(InterleavedOneFOneB, MatchesMegatronOpByOpForTwoRanksSixMicroBatchesThreeChunks) {
  const std::vector<std::string> expected = {
      "F0.0 F1.0 F0.1 F1.1 F0.2 F1.2 F2.0 B0.2 F3.0 B1.2 F2.1 B0.1 F3.1 B1.1 F2.2 B0.0 F3.2 B1.0 F4.0 B2.2 "
      "F5.0 "
      "B3.2 F4.1 B2.1 F5.1 B3.1 F4.2 B2.0 F5.2 B3.0 B4.2 B5.2 B4.1 B5.1 B4.0 B5.0",
      "F0.0 F1.0 F0.1 F1.1 F0.2 B0.2 F1.2 B1.2 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 F2.2 B2.2 F3.2 B3.2 "
      "F4.0 "
      "B2.1 F5.0 B3.1 F4.1 B2.0 F5.1 B3.0 F4.2 B4.2 F5.2 B5.2 B4.1 B5.1 B4.0 B5.0",
  };
  EXPECT_EQ(rank_texts(make_interleaved_one_f_one_b(2, 6, 3)), expected);
}

// Megatron's relaxed form: a micro-batch group larger than pp
// (microbatch_group_size_per_vp_stage = 5 with pp = 4, m = 10).
TEST(InterleavedOneFOneB, MatchesMegatronWithALargerMicroBatchGroup) {
  const auto s = make_interleaved_one_f_one_b(4, 10, 2, 5);
  EXPECT_EQ(rank_texts(s)[0],
            "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 F1.1 F2.1 F3.1 F4.1 F5.0 F6.0 B0.1 F7.0 B1.1 F8.0 B2.1 F9.0 B3.1 "
            "F5.1 B4.1 "
            "F6.1 B0.0 F7.1 B1.0 F8.1 B2.0 F9.1 B3.0 B4.0 B5.1 B6.1 B7.1 B8.1 B9.1 B5.0 B6.0 B7.0 B8.0 B9.0");
  EXPECT_EQ(rank_texts(s)[3],
            "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.1 B4.1 F5.0 B0.0 F6.0 B1.0 "
            "F7.0 B2.0 "
            "F8.0 B3.0 F9.0 B4.0 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 F8.1 B8.1 F9.1 B9.1 B5.0 B6.0 B7.0 B8.0 B9.0");
}

// Warm-up forwards of rank r: w = min(2 (p - r - 1) + (v - 1) g, m v). The
// steady phase opens with one more forward before the first backward.
TEST(InterleavedOneFOneB, WarmUpCountPerRankFollowsMegatronsFormula) {
  for (int p : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (int k : {1, 2, 3}) {
        const int m = k * p;
        const auto s = make_interleaved_one_f_one_b(p, m, v);
        for (int r = 0; r < p; ++r) {
          const auto& ops = s.per_rank[r];
          const auto first_backward = std::find_if(
              ops.begin(), ops.end(), [](const PipeOp& op) { return op.kind != PipeOpKind::forward; });
          const int before_first_backward = static_cast<int>(first_backward - ops.begin());
          const int warmup = std::min(2 * (p - r - 1) + (v - 1) * p, m * v);
          EXPECT_EQ(before_first_backward, warmup < m * v ? warmup + 1 : warmup)
              << "p=" << p << " v=" << v << " m=" << m << " rank " << r;
        }
      }
}

TEST(InterleavedOneFOneB, EveryListIsCompleteAndRunsWithoutDeadlock) {
  for (int p : {1, 2, 3, 4, 8})
    for (int v : {2, 3, 4})
      for (int k : {1, 2, 5}) {
        const auto s = make_interleaved_one_f_one_b(p, k * p, v);
        EXPECT_EQ(testing::op_count_problem(s), "") << p << " " << v << " " << k;
        EXPECT_TRUE(testing::runs_to_completion(s)) << p << " " << v << " " << k;
      }
}

TEST(InterleavedOneFOneB, RejectsMicroBatchCountsMegatronRejects) {
  EXPECT_THROW(make_interleaved_one_f_one_b(4, 6, 2), std::invalid_argument);  // last group of 2 < pp
  EXPECT_THROW(make_interleaved_one_f_one_b(4, 2, 2), std::invalid_argument);  // fewer micro-batches than pp
  EXPECT_THROW(make_interleaved_one_f_one_b(4, 8, 1), std::invalid_argument);  // one chunk: that is 1F1B
  EXPECT_NO_THROW(make_interleaved_one_f_one_b(4, 10, 2, 5));
}

TEST(InterleavedOneFOneB, ChunksAreLoopedOverTheRanks) {
  const auto s = make_interleaved_one_f_one_b(4, 4, 3);
  EXPECT_EQ(s.virtual_stage(1, 0), 1);
  EXPECT_EQ(s.virtual_stage(1, 2), 9);
  EXPECT_EQ(s.rank_of(9), 1);
  EXPECT_EQ(s.chunk_of(9), 2);
}

}  // namespace
}  // namespace trainsim::workloads
