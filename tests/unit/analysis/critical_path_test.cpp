#include "analysis/critical_path.hpp"

#include <gtest/gtest.h>

#include "support/hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

// A second flow (of task f1, from a GPU 2 over its own up link) crossing GPU
// 1's NIC down link while the activation from GPU 0 is in flight.
void add_flow_sharing_the_nic_down_link(testing::TwoStagePipeline& h) {
  h.timeline.links.push_back({"gpu2-nic_UP", 1e9, 0});
  h.timeline.flow_links.push_back(4);
  h.timeline.flow_links.push_back(1);
  h.timeline.flows.push_back({h.f1, 2, 1, 1e9, 1, 2, 4, 2});
}

double blamed(const std::vector<Blame>& list, const std::string& name) {
  for (const auto& b : list)
    if (b.name == name)
      return b.seconds;
  return -1;
}

// The iteration ends with GPU 0's optimizer; going back through releasers:
// B0 <- gradient send <- B1 <- F1 <- activation send <- F0, from time 0.
TEST(CriticalPath, FollowsTheChainThatSetTheIterationTime) {
  testing::TwoStagePipeline h;
  const auto path = critical_path(h.graph, h.timeline);
  std::vector<workloads::TaskId> tasks;
  for (const auto& seg : path.segments) {
    ASSERT_TRUE(seg.is_task);
    tasks.push_back(seg.task);
  }
  EXPECT_EQ(tasks, (std::vector<workloads::TaskId>{h.f0, h.s0, h.f1, h.b1, h.s1, h.b0, h.opt0}));
  EXPECT_DOUBLE_EQ(path.segments.front().start_s, 0);
  EXPECT_DOUBLE_EQ(path.segments.back().end_s, 8.5);
}

TEST(CriticalPath, BlameAddsUpToTheIterationPerKindGpuAndLink) {
  testing::TwoStagePipeline h;
  const auto path = critical_path(h.graph, h.timeline);
  EXPECT_DOUBLE_EQ(blamed(path.by_kind, "stage 0 compute"), 3);
  EXPECT_DOUBLE_EQ(blamed(path.by_kind, "stage 1 compute"), 3);
  EXPECT_DOUBLE_EQ(blamed(path.by_kind, "pp p2p"), 2);
  EXPECT_DOUBLE_EQ(blamed(path.by_kind, "stage 0 optimizer"), 0.5);
  double total = 0;
  for (const auto& b : path.by_kind)
    total += b.fraction;
  EXPECT_DOUBLE_EQ(total, 1);
  EXPECT_EQ(path.by_kind.front().seconds, 3);  // largest first
  EXPECT_DOUBLE_EQ(blamed(path.by_gpu, "gpu 0"), 3.5);
  EXPECT_DOUBLE_EQ(blamed(path.by_gpu, "gpu 1"), 3);
  // Each send's link pair is equally loaded: the first link of its route.
  EXPECT_DOUBLE_EQ(blamed(path.by_link, "gpu0-nic_UP"), 1);
  EXPECT_DOUBLE_EQ(blamed(path.by_link, "gpu1-nic_UP"), 1);
}

TEST(CriticalPath, ALateStartBecomesAWaitSegment) {
  testing::TwoStagePipeline h;
  // B0 starts 0.5 s after the gradient arrived (a launch delay).
  for (auto& r : h.timeline.records.recorded()) {
    if (r.task == h.b0) {
      r.start_s = 6.5;
      r.end_s = 8.5;
    }
    if (r.task == h.opt0) {
      r.start_s = 8.5;
      r.end_s = 9;
    }
  }
  h.timeline.end_s = 9;
  const auto path = critical_path(h.graph, h.timeline);
  EXPECT_DOUBLE_EQ(blamed(path.by_kind, "wait"), 0.5);
  double total = 0;
  for (const auto& seg : path.segments)
    total += seg.end_s - seg.start_s;
  EXPECT_DOUBLE_EQ(total, 9);
}

TEST(CriticalPath, TheBusiestLinkOfATransferIsTheOneCarryingMostLoad) {
  testing::TwoStagePipeline h;
  // A second flow shares GPU 1's NIC down link while the activation is in
  // flight: that link, not GPU 0's up link, is the bottleneck.
  add_flow_sharing_the_nic_down_link(h);
  const LinkLoadIndex index(h.timeline);
  EXPECT_EQ(index.busiest_link(h.s0, 1, 2), 1);
  EXPECT_EQ(index.flows_of(h.s0).size(), 1u);
}

// The index built for the path's tasks only gives, for those and for any
// other task (then from the index over every flow), what the index over
// every flow gives.
TEST(CriticalPath, AnIndexOfTheAskedTasksAnswersAsTheIndexOfEveryTask) {
  testing::TwoStagePipeline h;
  add_flow_sharing_the_nic_down_link(h);
  const LinkLoadIndex every(h.timeline);
  const LinkLoadIndex asked(h.timeline, LinkClasses::of(h.timeline), {h.s0, h.f1});
  const auto flows = FlowIndex::of_tasks(h.timeline, false, {h.s0, h.f1});
  ASSERT_EQ(flows.keys(), 2u);
  EXPECT_EQ(flows.of(0).size(), every.flows_of(h.s0).size());
  EXPECT_EQ(flows.of(1).size(), every.flows_of(h.f1).size());
  // The asked ones first, then one outside them, then the asked again.
  for (const workloads::TaskId task : {h.s0, h.f1, h.s1, h.b0, h.s0}) {
    EXPECT_EQ(asked.flows_of(task), every.flows_of(task)) << task;
    EXPECT_EQ(asked.busiest_link(task, 1, 2), every.busiest_link(task, 1, 2)) << task;
    EXPECT_EQ(asked.busiest_link(task, 4, 6), every.busiest_link(task, 4, 6)) << task;
  }
}

}  // namespace
}  // namespace trainsim::analysis
