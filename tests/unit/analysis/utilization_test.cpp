#include "analysis/utilization.hpp"

#include <gtest/gtest.h>

#include "hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

using testing::Stream;
using workloads::CommKind;
using workloads::TaskKind;

// One link of 100 B/s over a 10 s iteration: flows [0,2] and [1,3] (100 B
// each) overlap, [5,6] (50 B) is alone. Busy [0,3] + [5,6] = 4 s.
TEST(Utilization, LinkBusyFractionBytesAndPeakConcurrency) {
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  const auto send = graph.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = 1});
  Timeline t;
  t.end_s = 10;
  t.links = {{"hot", 100, 0}, {"calm", 100, 0}};
  t.flow_links = {0, 1};
  t.flows = {{send, 0, 1, 100, 0, 2, 0, 1},
             {send, 0, 1, 100, 1, 3, 0, 1},
             {send, 0, 1, 50, 5, 6, 0, 1},
             {send, 0, 1, 10, 0, 1, 1, 1},
             {send, 0, 1, 10, 1, 2, 1, 1}};
  const auto u = analyze_utilization(graph, t);
  ASSERT_EQ(u.links.size(), 2u);
  EXPECT_EQ(u.flow_count, 5u);
  const auto& hot = u.links[0];
  EXPECT_DOUBLE_EQ(hot.bytes, 250);
  EXPECT_EQ(hot.flows, 3u);
  EXPECT_DOUBLE_EQ(hot.busy_s, 4);
  EXPECT_DOUBLE_EQ(hot.busy_fraction, 0.4);
  EXPECT_DOUBLE_EQ(hot.utilization, 250.0 / (100 * 10));
  EXPECT_EQ(hot.peak_concurrent_flows, 2);
  // Back-to-back flows are not concurrent.
  EXPECT_EQ(u.links[1].peak_concurrent_flows, 1);
  EXPECT_DOUBLE_EQ(u.links[1].busy_fraction, 0.2);
  EXPECT_EQ(u.hottest, (std::vector<int>{0, 1}));
}

// Compute [0,1]; TP communication [0.5,2]; DP communication [1.5,3]. Exposed:
// [1,1.5] TP alone, [1.5,2] shared (half each), [2,3] DP alone.
TEST(Utilization, ExposedCommunicationIsSplitByKindAndAddsUp) {
  workloads::TaskGraph graph;
  graph.gpu_count = 1;
  const auto f = graph.add({.kind = TaskKind::forward, .gpu = 0});
  const int group = graph.add_group({0});
  const auto tp = graph.add({.kind = TaskKind::collective, .comm = CommKind::tp, .group = group});
  const auto dp = graph.add({.kind = TaskKind::collective, .comm = CommKind::dp, .group = group});
  Timeline t;
  t.end_s = 4;
  t.records = {
      {f, 0, Stream::compute, 0, 1}, {tp, 0, Stream::tp_comm, 0.5, 2}, {dp, 0, Stream::dp_comm, 1.5, 3}};
  const auto u = analyze_utilization(graph, t);
  const auto& g = u.gpus[0];
  EXPECT_DOUBLE_EQ(g.compute_busy_s, 1);
  EXPECT_DOUBLE_EQ(g.comm_busy_s, 2.5);
  EXPECT_DOUBLE_EQ(g.overlap_s, 0.5);
  EXPECT_DOUBLE_EQ(g.exposed_by_kind_s[comm_kind_index(CommKind::tp)], 0.75);
  EXPECT_DOUBLE_EQ(g.exposed_by_kind_s[comm_kind_index(CommKind::pp)], 0);
  EXPECT_DOUBLE_EQ(g.exposed_by_kind_s[comm_kind_index(CommKind::dp)], 1.25);
  EXPECT_DOUBLE_EQ(g.comm_busy_by_kind_s[comm_kind_index(CommKind::dp)], 1.5);
}

TEST(Utilization, APipelineTransferIsCommunicationOnBothEnds) {
  testing::TwoStagePipeline h;
  const auto u = analyze_utilization(h.graph, h.timeline);
  // GPU 1's optimizer [5,5.5] hides half of the gradient send.
  EXPECT_DOUBLE_EQ(u.gpus[0].exposed_by_kind_s[comm_kind_index(CommKind::pp)], 2);
  EXPECT_DOUBLE_EQ(u.gpus[1].exposed_by_kind_s[comm_kind_index(CommKind::pp)], 1.5);
}

}  // namespace
}  // namespace trainsim::analysis
