#include "analysis/record_list.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "analysis/timeline.hpp"

namespace trainsim::analysis {
namespace {

// A fold of order 3 on 6 GPUs (0 -> 2 -> 4 -> 0, 1 -> 3 -> 5 -> 1) and 7
// tasks (0 -> 1 -> 2 -> 0, 3 -> 4 -> 5 -> 3, task 6 its own image: a
// spanning collective), with two recorded routes (offsets 0 and 2 of
// flow_links) whose images are at 4, 6 and 8, 10.
std::shared_ptr<const FoldImages> order_three() {
  FoldImages f;
  f.order = 3;
  f.tasks = *PermutationPowers::of(std::vector<std::size_t>{1, 2, 0, 4, 5, 3, 6}, 3);
  f.endpoints = *PermutationPowers::of(std::vector<int>{2, 3, 4, 5, 0, 1}, 3);
  f.route_slot = {0, FoldImages::kNoRoute, 1, FoldImages::kNoRoute, FoldImages::kNoRoute};
  f.route_images = {0, 4, 6, 2, 8, 10};
  return std::make_shared<const FoldImages>(std::move(f));
}

TEST(PermutationPowers, PowerWalksTheCycleAndFixesFixedPoints) {
  const auto p = PermutationPowers::of(std::vector<std::size_t>{1, 2, 0, 4, 5, 3, 6}, 3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->power(0, 0), 0u);
  EXPECT_EQ(p->power(0, 1), 1u);
  EXPECT_EQ(p->power(0, 2), 2u);
  EXPECT_EQ(p->power(2, 1), 0u);
  EXPECT_EQ(p->power(4, 2), 3u);
  EXPECT_EQ(p->power(6, 2), 6u);
  EXPECT_TRUE(p->fixed(6));
  EXPECT_FALSE(p->fixed(5));
}

TEST(PermutationPowers, RefusesCyclesOfAnotherLengthAndNonPermutations) {
  EXPECT_FALSE(PermutationPowers::of(std::vector<std::size_t>{1, 0, 3, 4, 2}, 3));  // a 2-cycle
  EXPECT_FALSE(PermutationPowers::of(std::vector<std::size_t>{1, 2, 1}, 3));        // not a permutation
  EXPECT_FALSE(PermutationPowers::of(std::vector<int>{1, -1}, 2));
  EXPECT_FALSE(PermutationPowers::of(std::vector<std::size_t>{1, 2, 7}, 3));  // out of range
}

TEST(RecordList, ReadsAsEachRecordFollowedByItsImages) {
  Timeline t;
  t.records = {{0, 0, Stream::compute, 0, 1}, {6, 1, Stream::dp_comm, 1, 2}, {3, 1, Stream::tp_comm, 2, 3}};
  t.records.expand(order_three());
  const std::vector<TaskRecord> want = {{0, 0, Stream::compute, 0, 1}, {1, 2, Stream::compute, 0, 1},
                                        {2, 4, Stream::compute, 0, 1}, {6, 1, Stream::dp_comm, 1, 2},
                                        {3, 1, Stream::tp_comm, 2, 3}, {4, 3, Stream::tp_comm, 2, 3},
                                        {5, 5, Stream::tp_comm, 2, 3}};
  ASSERT_EQ(t.records.size(), want.size());
  std::size_t i = 0;
  for (const auto& r : t.records) {
    ASSERT_LT(i, want.size());
    EXPECT_EQ(r.task, want[i].task) << i;
    EXPECT_EQ(r.gpu, want[i].gpu) << i;
    EXPECT_EQ(r.stream, want[i].stream) << i;
    EXPECT_EQ(r.start_s, want[i].start_s) << i;
    // Random access gives the same record as iteration.
    EXPECT_EQ(t.records[i].task, want[i].task) << i;
    EXPECT_EQ(t.records[i].gpu, want[i].gpu) << i;
    ++i;
  }
  EXPECT_EQ(i, want.size());
  EXPECT_EQ(t.records.back().task, 5u);
  EXPECT_THROW(t.records.push_back({}), std::logic_error);
}

TEST(RecordList, FlowImagesTakeImageEndpointsRoutesAndTasks) {
  Timeline t;
  t.flows = {{3, 0, 1, 100, 0, 1, 2, 2}, {6, 5, 0, 50, 1, 2, 0, 2}};
  t.flows.expand(order_three());
  ASSERT_EQ(t.flows.size(), 6u);
  const std::vector<FlowRecord> want = {{3, 0, 1, 100, 0, 1, 2, 2},  {4, 2, 3, 100, 0, 1, 8, 2},
                                        {5, 4, 5, 100, 0, 1, 10, 2}, {6, 5, 0, 50, 1, 2, 0, 2},
                                        {6, 1, 2, 50, 1, 2, 4, 2},   {6, 3, 4, 50, 1, 2, 6, 2}};
  std::size_t i = 0;
  for (const auto& f : t.flows) {
    ASSERT_LT(i, want.size());
    for (const auto& g : {f, t.flows[i]}) {
      EXPECT_EQ(g.task, want[i].task) << i;
      EXPECT_EQ(g.src_gpu, want[i].src_gpu) << i;
      EXPECT_EQ(g.dst_gpu, want[i].dst_gpu) << i;
      EXPECT_EQ(g.first_link, want[i].first_link) << i;
      EXPECT_EQ(g.bytes, want[i].bytes) << i;
    }
    ++i;
  }
  EXPECT_EQ(i, want.size());
}

TEST(RecordList, WithoutImagesReadsAsRecorded) {
  Timeline t;
  t.records.push_back({2, 1, Stream::compute, 0, 1});
  t.records.recorded()[0].end_s = 4;
  ASSERT_EQ(t.records.size(), 1u);
  EXPECT_EQ(t.records[0].end_s, 4);
  EXPECT_FALSE(t.records.expanded());
}

}  // namespace
}  // namespace trainsim::analysis
