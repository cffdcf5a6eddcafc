// The writers read a folded timeline class by class (RecordList::images_of):
// what a record's images share is formatted once. Their files must be the
// bytes they write for the same records materialised one by one, including
// where an image's task does not share its record's row fields.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::analysis {
namespace {

using workloads::CommKind;
using workloads::TaskKind;

// Two replicas of one GPU each (GPU 0 -> 1 -> 0 under the rotation):
//   task 0 forward mb0 on GPU 0, its image task 1 on GPU 1;
//   task 2 a send 0 -> 1, its image task 3 a send 1 -> 0;
//   task 4 an all-reduce over both GPUs, its own image;
//   task 5 forward mb1 on GPU 0, its image task 6 forward mb2 on GPU 1: not
//   the same name, so its row is formatted whole.
struct FoldedPair {
  workloads::TaskGraph graph;
  platforms::ClusterSpec cluster = testing::uniform_cluster(2, 1, 1e9, 0);
  workloads::ModelSpec model;
  workloads::ParallelPlan plan{.dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2};
  Timeline folded, full;

  FoldedPair() {
    graph.gpu_count = 2;
    graph.groups = {{0, 1}};
    for (int gpu : {0, 1})
      graph.add({.kind = TaskKind::forward, .gpu = gpu, .stage = 0, .micro_batch = 0, .duration_s = 1});
    for (int gpu : {0, 1})
      graph.add({.kind = TaskKind::send,
                 .comm = CommKind::pp,
                 .gpu = gpu,
                 .peer = 1 - gpu,
                 .stage = 0,
                 .micro_batch = 0,
                 .bytes = 1e6});
    graph.add({.kind = TaskKind::collective, .comm = CommKind::dp, .group = 0, .stage = 0, .bytes = 3e6});
    for (int mb : {1, 2})
      graph.add({.kind = TaskKind::forward, .gpu = mb - 1, .stage = 0, .micro_batch = mb, .duration_s = 1});
    graph.resident_memory.resize(2);

    const CollectiveChoice ring{platforms::CollectiveAlgorithm::ring, 2, platforms::Fidelity::automatic};
    for (Timeline* t : {&folded, &full}) {
      t->end_s = 5;
      t->links = {{"gpu0-nic_UP", 1e9, 1e-6}, {"gpu1-nic_UP", 1e9, 1e-6}};
      t->flow_links = {0, 1};
      t->collectives[4] = ring;
      t->gpu_energy_J = {1.5, 2.5};
    }
    folded.records = {{0, 0, Stream::compute, 0, 1.25},
                      {2, 0, Stream::pp_comm, 1.25, 2},
                      {4, 0, Stream::dp_comm, 2, 3.1},
                      {4, 1, Stream::dp_comm, 2, 3.1},
                      {5, 0, Stream::compute, 3.1, 4.5}};
    folded.flows = {{2, 0, 1, 1e6, 1.25, 2, 0, 1}};
    full.records = {{0, 0, Stream::compute, 0, 1.25},  {1, 1, Stream::compute, 0, 1.25},
                    {2, 0, Stream::pp_comm, 1.25, 2},  {3, 1, Stream::pp_comm, 1.25, 2},
                    {4, 0, Stream::dp_comm, 2, 3.1},   {4, 1, Stream::dp_comm, 2, 3.1},
                    {5, 0, Stream::compute, 3.1, 4.5}, {6, 1, Stream::compute, 3.1, 4.5}};
    full.flows = {{2, 0, 1, 1e6, 1.25, 2, 0, 1}, {3, 1, 0, 1e6, 1.25, 2, 1, 1}};

    FoldImages images;
    images.order = 2;
    images.tasks = *PermutationPowers::of(std::vector<std::size_t>{1, 0, 3, 2, 4, 6, 5}, 2);
    images.endpoints = *PermutationPowers::of(std::vector<int>{1, 0}, 2);
    images.route_slot = {0, FoldImages::kNoRoute, FoldImages::kNoRoute};
    images.route_images = {0, 1};
    const auto shared = std::make_shared<const FoldImages>(std::move(images));
    folded.records.expand(shared);
    folded.flows.expand(shared);
  }
  RunContext run() const { return {"pair", "pair.yaml", cluster, model, plan, graph}; }
};

TEST(FoldedWriters, TimelineCsvOfAFoldedTimelineIsTheMaterialisedOnesBytes) {
  const FoldedPair p;
  ASSERT_EQ(p.folded.records.size(), p.full.records.size());
  std::ostringstream folded, full;
  write_timeline_csv(folded, p.run(), p.folded);
  write_timeline_csv(full, p.run(), p.full);
  EXPECT_EQ(folded.str(), full.str());
  // The rows the fold shares and the one it formats whole are both there.
  EXPECT_NE(full.str().find("\n1,compute,forward,F mb0,0,0,0,1.25,0,-1,\n"), std::string::npos) << full.str();
  EXPECT_NE(full.str().find("\n1,compute,forward,F mb2,2,0,3.1,4.5,0,-1,\n"), std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("\n1,pp_comm,send,pp send mb0,0,0,1.25,2,1000000,0,\n"), std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("\n1,dp_comm,collective,dp all_reduce,-1,0,2,3.1,3000000,-1,ring\n"),
            std::string::npos)
      << full.str();
}

TEST(FoldedWriters, TheArchiveOfAFoldedTimelineIsTheMaterialisedOnesBytes) {
  const FoldedPair p;
  std::ostringstream folded, full;
  write_run_archive(folded, "{}", p.graph, p.folded);
  write_run_archive(full, "{}", p.graph, p.full);
  EXPECT_EQ(folded.str(), full.str());
  const auto back = parse_run_archive(folded.str());
  ASSERT_EQ(back.timeline.records.size(), 8u);
  EXPECT_EQ(back.timeline.records[7].task, 6u);
  EXPECT_EQ(back.timeline.records[7].gpu, 1);
  ASSERT_EQ(back.timeline.flows.size(), 2u);
  EXPECT_EQ(back.timeline.flows[1].src_gpu, 1);
  EXPECT_EQ(back.timeline.flows[1].first_link, 1u);
}

}  // namespace
}  // namespace trainsim::analysis
