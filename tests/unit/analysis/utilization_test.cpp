#include "analysis/utilization.hpp"

#include "analysis/bubbles.hpp"
#include "analysis/execution_index.hpp"
#include "analysis/flow_index.hpp"

#include <gtest/gtest.h>

#include "support/hand_made_runs.hpp"

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
  graph.seal();
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

// Three links; flow 0 (task 4) crosses links 0 and 2, flow 1 (task 1) link
// 2, flow 2 (task 4) links 2 and 0; link 1 carries nothing. Each key lists
// its flows in flow order; a key past the last is empty.
TEST(FlowIndex, GroupsFlowsByLinkAndByTaskInFlowOrder) {
  Timeline t;
  t.links = {{"a", 1, 0}, {"b", 1, 0}, {"c", 1, 0}};
  t.flow_links = {0, 2, 2, 2, 0};
  t.flows = {{4, 0, 1, 1, 0, 1, 0, 2}, {1, 0, 1, 1, 0, 1, 2, 1}, {4, 0, 1, 1, 0, 1, 3, 2}};
  const auto list = [](const FlowIndex& index, std::size_t key) {
    const auto s = index.of(key);
    return std::vector<std::uint32_t>(s.begin(), s.end());
  };
  const auto by_link = FlowIndex::by_link(t);
  EXPECT_EQ(by_link.keys(), 3u);
  EXPECT_EQ(list(by_link, 0), (std::vector<std::uint32_t>{0, 2}));
  EXPECT_TRUE(list(by_link, 1).empty());
  EXPECT_EQ(list(by_link, 2), (std::vector<std::uint32_t>{0, 1, 2}));
  const auto by_task = FlowIndex::by_task(t);
  EXPECT_EQ(by_task.keys(), 5u);
  EXPECT_EQ(list(by_task, 4), (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(list(by_task, 1), (std::vector<std::uint32_t>{1}));
  EXPECT_TRUE(list(by_task, 0).empty());
  EXPECT_TRUE(list(by_task, 9).empty());
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
  graph.seal();
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

// Compute [0,1]; DP all-gather [0.5,2]; DP reduce-scatter [1.5,3]; a BPipe
// eviction from GPU 0 to GPU 1 [3,4]. GPU 0 exposed: all-gather alone
// [1,1.5], shared [1.5,2] (half each), reduce-scatter alone [2,3], the
// eviction [3,4]; GPU 1 (no compute) sees the eviction whole too.
TEST(Utilization, ExposedCommunicationIsSplitByOperationAndAddsUp) {
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  const auto f = graph.add({.kind = TaskKind::forward, .gpu = 0});
  const int group = graph.add_group({0});
  const auto ag = graph.add({.kind = TaskKind::collective,
                             .comm = CommKind::dp,
                             .op = workloads::CollectiveOp::all_gather,
                             .group = group});
  const auto rs = graph.add({.kind = TaskKind::collective,
                             .comm = CommKind::dp,
                             .op = workloads::CollectiveOp::reduce_scatter,
                             .group = group});
  const auto evict = graph.add({.kind = TaskKind::send,
                                .comm = CommKind::pp,
                                .transfer = workloads::TransferKind::evict,
                                .gpu = 0,
                                .peer = 1});
  Timeline t;
  t.end_s = 4;
  t.records = {{f, 0, Stream::compute, 0, 1},
               {ag, 0, Stream::dp_comm, 0.5, 2},
               {rs, 0, Stream::dp_comm, 1.5, 3},
               {evict, 0, Stream::pp_comm, 3, 4}};
  graph.seal();
  const auto u = analyze_utilization(graph, t);
  EXPECT_EQ(comm_op_label(graph[ag]), "dp_all_gather");
  EXPECT_EQ(comm_op_label(graph[evict]), "pp_evict");
  EXPECT_EQ(comm_op_label(graph[f]), "");
  EXPECT_EQ(comm_op_label({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = 1}), "pp_send");
  ASSERT_EQ(u.exposed_by_op_s.size(), 3u);
  EXPECT_DOUBLE_EQ(u.exposed_by_op_s.at("dp_all_gather"), 0.75);
  EXPECT_DOUBLE_EQ(u.exposed_by_op_s.at("dp_reduce_scatter"), 1.25);
  EXPECT_DOUBLE_EQ(u.exposed_by_op_s.at("pp_evict"), 2);
  // The split by operation adds up to the split by kind.
  double by_op = 0;
  for (const auto& [label, s] : u.exposed_by_op_s)
    by_op += s;
  double by_kind = 0;
  for (double s : u.exposed_by_kind_s)
    by_kind += s;
  EXPECT_DOUBLE_EQ(by_op, by_kind);
}

// GPUs 0 and 1 run the same timeline (compute [0,1] and [2,2.5], TP
// [0.5,2], DP [1.5,3]), GPU 2 another; links 0 and 1 carry flows at the
// same instants (other bytes), link 2 at others. Utilisation computes a
// GPU's or link's figures once per distinct input and copies them to the
// ones alike: each must equal the figures of a timeline holding that GPU or
// link alone, bit for bit.
TEST(Utilization, GpusAndLinksAlikeGetTheFiguresOfTheirOwnComputation) {
  workloads::TaskGraph graph;
  graph.gpu_count = 3;
  std::vector<TaskRecord> records;
  const auto add_gpu = [&](int gpu, double shift) {
    const int group = graph.add_group({gpu});
    const auto f = graph.add({.kind = TaskKind::forward, .gpu = gpu});
    const auto b = graph.add({.kind = TaskKind::backward, .gpu = gpu});
    const auto tp = graph.add({.kind = TaskKind::collective, .comm = CommKind::tp, .group = group});
    const auto dp = graph.add({.kind = TaskKind::collective, .comm = CommKind::dp, .group = group});
    records.push_back({f, gpu, Stream::compute, 0, 1 + shift});
    records.push_back({tp, gpu, Stream::tp_comm, 0.5, 2});
    records.push_back({b, gpu, Stream::compute, 2 + shift, 2.5 + shift});
    records.push_back({dp, gpu, Stream::dp_comm, 1.5, 3});
  };
  add_gpu(0, 0);
  add_gpu(1, 0);
  add_gpu(2, 0.25);
  const auto send = graph.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = 1});
  graph.seal();
  Timeline t;
  t.end_s = 4;
  for (const auto& r : records)
    t.records.push_back(r);
  t.links = {{"a", 100, 0}, {"b", 50, 0}, {"c", 100, 0}};
  t.flow_links = {0, 1, 2};
  const std::vector<FlowRecord> flows{{send, 0, 1, 100, 0, 2, 0, 1}, {send, 0, 1, 30, 0, 2, 1, 1},
                                      {send, 0, 1, 100, 1, 3, 0, 1}, {send, 0, 1, 70, 1, 3, 1, 1},
                                      {send, 0, 1, 100, 1, 3, 2, 1}, {send, 0, 1, 10, 2, 2.5, 2, 1}};
  for (const auto& f : flows)
    t.flows.push_back(f);
  const auto u = analyze_utilization(graph, t);

  for (int g = 0; g < 3; ++g) {
    Timeline alone;
    alone.end_s = t.end_s;
    for (const auto& r : records)
      if (r.gpu == g)
        alone.records.push_back(r);
    const auto by_itself = analyze_utilization(graph, alone);
    const auto& x = u.gpus[static_cast<std::size_t>(g)];
    const auto& y = by_itself.gpus[static_cast<std::size_t>(g)];
    EXPECT_EQ(x.gpu, g);
    EXPECT_EQ(x.compute_busy_s, y.compute_busy_s) << "gpu " << g;
    EXPECT_EQ(x.comm_busy_s, y.comm_busy_s) << "gpu " << g;
    EXPECT_EQ(x.overlap_s, y.overlap_s) << "gpu " << g;
    EXPECT_EQ(x.comm_busy_by_kind_s, y.comm_busy_by_kind_s) << "gpu " << g;
    EXPECT_EQ(x.exposed_by_kind_s, y.exposed_by_kind_s) << "gpu " << g;
  }
  EXPECT_NE(u.gpus[2].compute_busy_s, u.gpus[0].compute_busy_s);
  // Summed over the three GPUs: twice GPU 0's plus GPU 2's, by label too.
  const auto tp_label = comm_op_label(graph[2]);
  Timeline gpu2;
  gpu2.end_s = t.end_s;
  for (const auto& r : records)
    if (r.gpu == 2)
      gpu2.records.push_back(r);
  Timeline gpu0;
  gpu0.end_s = t.end_s;
  for (const auto& r : records)
    if (r.gpu == 0)
      gpu0.records.push_back(r);
  const double tp0 = analyze_utilization(graph, gpu0).exposed_by_op_s.at(tp_label);
  const double tp2 = analyze_utilization(graph, gpu2).exposed_by_op_s.at(tp_label);
  EXPECT_EQ(u.exposed_by_op_s.at(tp_label), tp0 + tp0 + tp2);

  for (std::uint32_t l = 0; l < 3; ++l) {
    Timeline alone;
    alone.end_s = t.end_s;
    alone.links = t.links;
    alone.flow_links = t.flow_links;
    for (const auto& f : flows)
      if (f.first_link == l)
        alone.flows.push_back(f);
    const auto by_itself = analyze_utilization(graph, alone);
    const auto& x = u.links[l];
    const auto& y = by_itself.links[l];
    EXPECT_EQ(x.bytes, y.bytes) << "link " << l;
    EXPECT_EQ(x.flows, y.flows) << "link " << l;
    EXPECT_EQ(x.busy_s, y.busy_s) << "link " << l;
    EXPECT_EQ(x.busy_fraction, y.busy_fraction) << "link " << l;
    EXPECT_EQ(x.utilization, y.utilization) << "link " << l;
    EXPECT_EQ(x.peak_concurrent_flows, y.peak_concurrent_flows) << "link " << l;
  }
  EXPECT_EQ(u.links[0].busy_s, 3);
  EXPECT_EQ(u.links[1].bytes, 100);
  EXPECT_EQ(u.links[2].busy_s, 2);
}

// What the bubbles read from utilisation's pass (analysis/report.cpp): per
// GPU, every record off the compute stream (a send's on both ends) merged,
// whichever kinds' lists the records sit in (GPUs 0 and 1 alike, GPU 2's
// lists shifted); a record whose parallelism is none of the kinds leaves it
// empty, and the bubbles then merge the records themselves.
TEST(Utilization, CommBusyIsEveryCommunicationRecordMergedPerGpuAndTheBubblesReadIt) {
  // GPU 0: F0 [0,1], send -> 1 [1,2], TP [1.5,3], B0 [3,4], DP [4,5];
  // GPU 1: F1 [2,3], TP [4,4.5], DP [4.5,5].
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  const int group = graph.add_group({0, 1});
  const auto f0 = graph.add({.kind = TaskKind::forward, .gpu = 0, .stage = 0, .micro_batch = 0});
  const auto send =
      graph.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = 1, .stage = 0});
  const auto f1 = graph.add({.kind = TaskKind::forward, .gpu = 1, .stage = 1, .micro_batch = 0});
  const auto b0 = graph.add({.kind = TaskKind::backward, .gpu = 0, .stage = 0, .micro_batch = 0});
  const auto tp = graph.add({.kind = TaskKind::collective, .comm = CommKind::tp, .group = group});
  const auto dp = graph.add({.kind = TaskKind::collective, .comm = CommKind::dp, .group = group});
  const auto none = graph.add({.kind = TaskKind::collective, .group = group});
  graph.depend(f0, send);
  graph.depend(send, f1);
  graph.depend(f0, b0);
  graph.depend(f1, tp);
  graph.depend(tp, dp);
  graph.seal();
  const workloads::ParallelPlan plan{
      .dp = 1, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 1};
  const auto timeline = [&](bool with_none) {
    Timeline t;
    t.end_s = 5;
    t.records = {{f0, 0, Stream::compute, 0, 1}, {send, 0, Stream::pp_comm, 1, 2},
                 {f1, 1, Stream::compute, 2, 3}, {tp, 0, Stream::tp_comm, 1.5, 3},
                 {b0, 0, Stream::compute, 3, 4}, {tp, 1, Stream::tp_comm, 4, 4.5},
                 {dp, 0, Stream::dp_comm, 4, 5}, {dp, 1, Stream::dp_comm, 4.5, 5}};
    if (with_none)
      t.records.push_back({none, 1, Stream::dp_comm, 2, 2.5});
    return t;
  };
  const Timeline t = timeline(false);
  const auto classes = GpuClasses::of(graph, t, 2);
  SharedIntervalLists comm_busy;
  analyze_utilization(graph, t, classes, LinkClasses::of(t), &comm_busy);
  ASSERT_EQ(comm_busy.size(), 2u);
  const std::vector<Interval> gpu0{{1, 3}, {4, 5}}, gpu1{{1, 2}, {4, 5}};
  EXPECT_EQ(comm_busy.of(0), gpu0);
  EXPECT_EQ(comm_busy.of(1), gpu1);

  const ExecutionIndex index(graph, t);
  const auto given = analyze_bubbles(graph, t, plan, index, classes, nullptr, &comm_busy);
  const auto own = analyze_bubbles(graph, t, plan, index, classes);
  for (std::size_t g = 0; g < 2; ++g) {
    EXPECT_EQ(given.gpus[g].cause_s, own.gpus[g].cause_s) << "gpu " << g;
    EXPECT_EQ(given.gpus[g].idle_part_s, own.gpus[g].idle_part_s) << "gpu " << g;
    EXPECT_EQ(given.gpus[g].exposed_comm_s, own.gpus[g].exposed_comm_s) << "gpu " << g;
    EXPECT_EQ(given.gpus[g].idle_s, own.gpus[g].idle_s) << "gpu " << g;
  }
  EXPECT_GT(own.gpus[1].idle_s, 0);

  const Timeline outside = timeline(true);
  analyze_utilization(graph, outside, GpuClasses::of(graph, outside, 2), LinkClasses::of(outside),
                      &comm_busy);
  EXPECT_EQ(comm_busy.size(), 0u);
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
