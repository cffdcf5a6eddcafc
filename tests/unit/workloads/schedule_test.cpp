#include <gtest/gtest.h>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

// Megatron-LM forward_backward_pipelining_without_interleaving, p = 4, m = 8,
// written out by hand from its warm-up / steady / cool-down loops.
TEST(OneFOneB, MatchesMegatronOrderOpByOpForFourStagesEightMicroBatches) {
  const auto s = make_one_f_one_b(4, 8);
  ASSERT_EQ(s.per_rank.size(), 4u);
  EXPECT_EQ(to_string(s.per_rank[0]), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(to_string(s.per_rank[1]), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(to_string(s.per_rank[2]), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  EXPECT_EQ(to_string(s.per_rank[3]), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

TEST(OneFOneB, FewerMicroBatchesThanStagesDegeneratesToAllForwardsThenBackwards) {
  const auto s = make_one_f_one_b(4, 2);
  EXPECT_EQ(to_string(s.per_rank[0]), "F0 F1 B0 B1");
  EXPECT_EQ(to_string(s.per_rank[3]), "F0 B0 F1 B1");
}

TEST(OneFOneB, EveryRankRunsEachMicroBatchOnceEachWay) {
  for (int p : {1, 2, 3, 8})
    for (int m : {1, 4, 7, 16}) {
      const auto s = make_one_f_one_b(p, m);
      for (const auto& ops : s.per_rank) {
        ASSERT_EQ(ops.size(), static_cast<std::size_t>(2 * m));
        std::vector<int> f(m, 0), b(m, 0);
        for (const auto& op : ops)
          (op.kind == PipeOpKind::forward ? f : b)[op.micro_batch]++;
        for (int i = 0; i < m; ++i)
          EXPECT_TRUE(f[i] == 1 && b[i] == 1) << "p=" << p << " m=" << m;
      }
    }
}

TEST(GPipe, AllForwardsThenBackwardsInReverse) {
  const auto s = make_gpipe(2, 3);
  EXPECT_EQ(to_string(s.per_rank[0]), "F0 F1 F2 B2 B1 B0");
  EXPECT_EQ(to_string(s.per_rank[1]), "F0 F1 F2 B2 B1 B0");
}

}  // namespace
}  // namespace trainsim::workloads
