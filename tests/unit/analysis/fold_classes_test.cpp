#include "analysis/fold_classes.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "analysis/timeline.hpp"

namespace trainsim::analysis {
namespace {

using workloads::CommKind;
using workloads::TaskKind;

// A fold of order 2 on 4 GPUs (replica 0: GPUs 0, 1; replica 1: GPUs 2, 3)
// and 5 tasks: a forward on GPU 0 (task 0, image 1 on GPU 2), a pipeline send
// 0 -> 1 (task 2, image 3: 2 -> 3) and a data-parallel all-reduce on every GPU
// (task 4, its own image). Links 0, 1 (a recorded route) map onto 2, 3.
struct Folded {
  workloads::TaskGraph graph;
  Timeline timeline;

  // `all_reduce_gpus`: the GPUs the all-reduce has a record on, in order;
  // `send_after`: how many of them come before the send's record (-1: the
  // send's record comes before them all).
  explicit Folded(int send_peer = 1, double image_all_reduce_end_s = 3,
                  std::vector<std::uint32_t> route = {0, 1}, std::vector<int> all_reduce_gpus = {0, 1, 2, 3},
                  int send_after = -1) {
    graph.gpu_count = 4;
    graph.add({.kind = TaskKind::forward, .gpu = 0});
    graph.add({.kind = TaskKind::forward, .gpu = 2});
    graph.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 0, .peer = send_peer});
    graph.add({.kind = TaskKind::send, .comm = CommKind::pp, .gpu = 2, .peer = (send_peer + 2) % 4});
    graph.add({.kind = TaskKind::collective, .comm = CommKind::dp, .gpu = 0});
    graph.seal();
    timeline.end_s = 3;
    timeline.records = {{0, 0, Stream::compute, 0, 1}};
    const TaskRecord send{2, 0, Stream::pp_comm, 1, 2};
    if (send_after < 0)
      timeline.records.push_back(send);
    for (std::size_t k = 0; k < all_reduce_gpus.size(); ++k) {
      if (static_cast<int>(k) == send_after)
        timeline.records.push_back(send);
      const int gpu = all_reduce_gpus[k];
      timeline.records.push_back({4, gpu, Stream::dp_comm, 2, gpu == 2 ? image_all_reduce_end_s : 3});
    }
    for (const char* name : {"l0", "l1", "l2", "l3"})
      timeline.links.push_back({name, 1e9, 0});
    // The recorded routes at 0 (two links) and 4 (link 1 alone), their
    // images at 2 and 5.
    timeline.flow_links = {route[0],
                           route[1],
                           static_cast<std::uint32_t>((route[0] + 2) % 4),
                           static_cast<std::uint32_t>((route[1] + 2) % 4),
                           1,
                           3};
    timeline.flows = {{2, 0, 1, 100, 1, 2, 0, 2}, {2, 0, 1, 50, 1, 2, 4, 1}};
    FoldImages f;
    f.order = 2;
    f.tasks = *PermutationPowers::of(std::vector<std::size_t>{1, 0, 3, 2, 4}, 2);
    f.endpoints = *PermutationPowers::of(std::vector<int>{2, 3, 0, 1}, 2);
    f.route_slot.assign(5, FoldImages::kNoRoute);
    f.route_slot[0] = 0;
    f.route_slot[4] = 1;
    f.route_images = {0, 2, 4, 5};
    auto images = std::make_shared<const FoldImages>(std::move(f));
    timeline.records.expand(images);
    timeline.flows.expand(images);
  }
};

TEST(GpuClasses, RepresentativesReadTheRecordsThatLandOnThemInTheFullListsOrder) {
  const Folded f;
  const auto classes = GpuClasses::of(f.graph, f.timeline, 4);
  ASSERT_TRUE(classes.folded());
  EXPECT_TRUE(classes.is_representative(0));
  EXPECT_TRUE(classes.is_representative(1));
  EXPECT_EQ(classes.representative(2), 0u);
  EXPECT_EQ(classes.representative(3), 1u);
  std::vector<std::pair<workloads::TaskId, int>> read;
  classes.for_each_record([&](const TaskRecord& r) { read.emplace_back(r.task, r.gpu); });
  // The forward and the send on GPU 0 (the send's peer, GPU 1, is a
  // representative too: read once), the all-reduce's records on 0 and 1; the
  // images on GPUs 2 and 3 are not read.
  const std::vector<std::pair<workloads::TaskId, int>> want{{0, 0}, {2, 0}, {4, 0}, {4, 1}};
  EXPECT_EQ(read, want);
}

// What GPU activity reserves its lists from instead of a pass of its own:
// each GPU's count is how many records for_each_record gives with it as
// their GPU or as a send's peer (a send whose peer's orbit lands under
// another power of the rotation is read twice, once per end).
TEST(GpuClasses, LandingCountsAreTheRecordsReadWithEachGpuAsTheirGpuOrPeer) {
  for (const int send_peer : {1, 3}) {
    const Folded f(send_peer);
    const auto classes = GpuClasses::of(f.graph, f.timeline, 4);
    ASSERT_TRUE(classes.folded());
    std::vector<std::uint32_t> read(4, 0);
    classes.for_each_record([&](const TaskRecord& r) {
      ++read[static_cast<std::size_t>(r.gpu)];
      const auto& task = f.graph[r.task];
      if (task.kind == TaskKind::send && task.peer >= 0)
        ++read[static_cast<std::size_t>(task.peer)];
    });
    // Only representatives' counts are read; an image GPU's may be anything.
    const auto counts = classes.landing_counts();
    ASSERT_EQ(counts.size(), 4u) << "send to " << send_peer;
    for (std::size_t g = 0; g < 4; ++g) {
      if (classes.is_representative(g)) {
        EXPECT_EQ(counts[g], read[g]) << "gpu " << g << ", send to " << send_peer;
      }
    }
  }
  EXPECT_TRUE(GpuClasses::of(Folded().graph, Timeline{}, 4).landing_counts().empty());
}

TEST(GpuClasses, AreTheIdentityWhenASpanningRecordDiffersFromItsImageGpus) {
  const Folded f(1, 2.5);
  const auto classes = GpuClasses::of(f.graph, f.timeline, 4);
  EXPECT_FALSE(classes.folded());
  EXPECT_TRUE(classes.is_representative(2));
  std::size_t read = 0;
  classes.for_each_record([&](const TaskRecord&) { ++read; });
  EXPECT_EQ(read, f.timeline.records.size());  // every record of the full list
}

TEST(GpuClasses, AreTheIdentityWhenASpanningRecordsImageGpuHasNoRecord) {
  const Folded f(1, 3, {0, 1}, {0, 1, 2});  // GPU 1's image, GPU 3, has none
  EXPECT_FALSE(GpuClasses::of(f.graph, f.timeline, 4).folded());
}

TEST(GpuClasses, AreTheIdentityWhenASpanningCollectiveHasTwoRecordsOnOneGpu) {
  const Folded shuffled(1, 3, {0, 1}, {3, 1, 2, 0});
  EXPECT_TRUE(GpuClasses::of(shuffled.graph, shuffled.timeline, 4).folded());  // in any order
  const Folded f(1, 3, {0, 1}, {0, 1, 2, 3, 1});
  EXPECT_FALSE(GpuClasses::of(f.graph, f.timeline, 4).folded());
}

// The replay records a collective's members in a row, which of() checks
// run by run; records of one task apart are checked as a whole (here GPU 0's
// image, GPU 2, has its record after the send's).
TEST(GpuClasses, CheckASpanningCollectivesRecordsApartAsTheyCheckThemInARow) {
  const Folded apart(1, 3, {0, 1}, {0, 1, 2, 3}, 2);
  EXPECT_TRUE(GpuClasses::of(apart.graph, apart.timeline, 4).folded());
  const Folded differs(1, 2.5, {0, 1}, {0, 1, 2, 3}, 2);
  EXPECT_FALSE(GpuClasses::of(differs.graph, differs.timeline, 4).folded());
  const Folded missing(1, 3, {0, 1}, {0, 1, 2}, 1);
  EXPECT_FALSE(GpuClasses::of(missing.graph, missing.timeline, 4).folded());
  const Folded twice(1, 3, {0, 1}, {0, 1, 2, 3, 1}, 3);
  EXPECT_FALSE(GpuClasses::of(twice.graph, twice.timeline, 4).folded());
}

TEST(GpuClasses, AreTheIdentityWhenASendStaysInOneOrbit) {
  const Folded f(2);  // 0 -> 2: its images 0 -> 2 and 2 -> 0 both reach GPU 0's orbit
  EXPECT_FALSE(GpuClasses::of(f.graph, f.timeline, 4).folded());
}

TEST(GpuClasses, AreTheIdentityOnATimelineThatIsNotFolded) {
  Timeline t;
  t.records = {{0, 0, Stream::compute, 0, 1}};
  workloads::TaskGraph g;
  g.gpu_count = 2;
  g.add({.kind = TaskKind::forward, .gpu = 0});
  g.seal();
  EXPECT_FALSE(GpuClasses::of(g, t, 2).folded());
}

TEST(LinkClasses, AnImageLinkReadsItsRepresentativesRecordedFlows) {
  const Folded f;
  const auto classes = LinkClasses::of(f.timeline);
  ASSERT_TRUE(classes.folded());
  EXPECT_EQ(classes.representative(2), 0u);
  EXPECT_EQ(classes.representative(3), 1u);
  ASSERT_EQ(classes.flows_of(0).size(), 1u);
  ASSERT_EQ(classes.flows_of(1).size(), 2u);  // both recorded flows, in order
  EXPECT_TRUE(classes.flows_of(2).empty());
  EXPECT_EQ(classes.record(classes.flows_of(0)[0]).bytes, 100);
  EXPECT_EQ(classes.record(classes.flows_of(1)[0]).bytes, 100);
  EXPECT_EQ(classes.record(classes.flows_of(1)[1]).bytes, 50);
}

TEST(LinkClasses, AnOrbitsFlowsAreEveryRecordedFlowCrossingItInFlowOrder) {
  // Flows on the two recorded routes, interleaved (routes shared by many
  // flows, as in a real run): each orbit's list holds every recorded flow
  // crossing one of its links, in flow order.
  Folded f;
  std::vector<FlowRecord> flows;
  for (std::uint32_t i = 0; i < 7; ++i)
    flows.push_back(i % 3 == 0 ? FlowRecord{2, 0, 1, 10.0 + i, 1, 2, 4, 1}
                               : FlowRecord{2, 0, 1, 10.0 + i, 1, 2, 0, 2});
  auto images = f.timeline.flows.fold_images();
  const auto shared = std::make_shared<const FoldImages>(*images);
  f.timeline.flows.clear();
  for (const auto& flow : flows)
    f.timeline.flows.push_back(flow);
  f.timeline.flows.expand(shared);
  const auto classes = LinkClasses::of(f.timeline);
  ASSERT_TRUE(classes.folded());
  // Link 0: the flows on route 0 (links 0, 1); link 1: every flow.
  const std::vector<std::uint32_t> on_0{1, 2, 4, 5}, on_1{0, 1, 2, 3, 4, 5, 6};
  const auto l0 = classes.flows_of(0), l1 = classes.flows_of(1);
  EXPECT_EQ(std::vector<std::uint32_t>(l0.begin(), l0.end()), on_0);
  EXPECT_EQ(std::vector<std::uint32_t>(l1.begin(), l1.end()), on_1);
  EXPECT_TRUE(classes.flows_of(2).empty());
  EXPECT_TRUE(classes.flows_of(3).empty());
}

TEST(LinkClasses, AreTheIdentityWhenARouteCrossesTwoLinksOfOneOrbit) {
  const Folded f(1, 3, {0, 2});  // links 0 and 2 are images of each other
  const auto classes = LinkClasses::of(f.timeline);
  EXPECT_FALSE(classes.folded());
  // Every flow of the full list on its own link: flow 0 crosses 0 and 2, its
  // image 2 and 0; flow 2 crosses 1, its image 3.
  EXPECT_EQ(classes.flows_of(0).size(), 2u);
  EXPECT_EQ(classes.flows_of(2).size(), 2u);
  EXPECT_EQ(classes.flows_of(3).size(), 1u);
}

}  // namespace
}  // namespace trainsim::analysis
