// How groups are laid out (rings per rail and per NVLink cycle, NCCL's
// trees) and what `auto` picks, by message size and group shape. Each TEST
// builds one platform in its own process; none runs a simulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "sim/collectives/flows.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/scenario/cluster_loader.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

struct Platform {
  platforms::ClusterSpec spec;
  std::unique_ptr<simgrid::s4u::Engine> engine;
  ClusterZone* zone = nullptr;
  explicit Platform(const std::string& preset, std::vector<std::string> overrides = {})
      : spec(scenario::load_cluster(preset, overrides)), engine(make_engine()) {
    zone = new ClusterZone(spec);  // owned by the engine
  }
};

std::vector<int> first(int n) {
  std::vector<int> gpus(static_cast<std::size_t>(n));
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

CollectiveAlgorithm pick(const Platform& p, CollectiveOp op, int ranks, double bytes,
                         CollectiveAlgorithm asked = CollectiveAlgorithm::automatic) {
  return resolve_algorithm({op, first(ranks), bytes, 1, asked}, *p.zone);
}

TEST(CollectiveLayout, NcclBinaryTree) {
  // NCCL's ncclGetBtree for 8 ranks: 0 -> 4, 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}.
  EXPECT_EQ(nccl_btree_parents(8), (std::vector<int>{-1, 2, 4, 2, 0, 6, 4, 6}));
  EXPECT_EQ(nccl_btree_parents(5), (std::vector<int>{-1, 2, 4, 2, 0}));
}

TEST(CollectiveLayout, DoubleBinaryTreesComplementEachOther) {
  Platform p("dgx-a100-hdr", {"cluster.gpus_per_node=1", "cluster.nic.per_node=1", "cluster.nodes=8"});
  const auto layout = layout_of(first(8), *p.zone);
  const auto trees = double_binary_trees(layout, *p.zone);
  ASSERT_EQ(trees.size(), 2u);
  auto leaves = [](const Tree& t) {
    std::set<int> inner;
    for (int parent : t.parent)
      if (parent >= 0)
        inner.insert(t.gpus[static_cast<std::size_t>(parent)]);
    std::set<int> out;
    for (int gpu : t.gpus)
      if (inner.count(gpu) == 0)
        out.insert(gpu);
    return out;
  };
  // No GPU is a leaf in both trees, so every NIC works in one of them.
  for (int gpu : leaves(trees[0]))
    EXPECT_EQ(leaves(trees[1]).count(gpu), 0u) << gpu;
  EXPECT_EQ(trees[0].height(), 3);
}

TEST(CollectiveLayout, MultiNodeRingsStayOnTheirRail) {
  Platform p("dgx-a100-hdr", {"cluster.nodes=4"});
  const auto rings = ring_channels(layout_of(first(32), *p.zone), *p.zone);
  ASSERT_EQ(rings.size(), 8u);
  std::set<int> entry_nics;
  for (const auto& ring : rings) {
    auto sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, first(32));  // a permutation of the group
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int a = ring[i], b = ring[(i + 1) % ring.size()];
      if (p.zone->node_of(a) != p.zone->node_of(b)) {
        EXPECT_EQ(p.zone->nic_index(a), p.zone->nic_index(b)) << a << " -> " << b;
        if (p.zone->node_of(b) == 1)
          entry_nics.insert(p.zone->nic_index(b));
      }
    }
  }
  EXPECT_EQ(entry_nics.size(), 8u);  // every NIC of node 1 takes one ring in
}

TEST(CollectiveLayout, CubeMeshRingsFollowNvlink) {
  Platform p("dgx1-v100", {"cluster.nodes=1"});
  const auto rings = ring_channels(layout_of(first(8), *p.zone), *p.zone);
  ASSERT_EQ(rings.size(), 6u);
  std::map<std::pair<int, int>, int> used;
  for (const auto& ring : rings)
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int a = ring[i], b = ring[(i + 1) % ring.size()];
      EXPECT_GT(p.zone->nvlink_lanes(a, b), 0) << a << " -> " << b;
      ++used[{a, b}];
    }
  for (const auto& [edge, count] : used)
    EXPECT_EQ(count, p.zone->nvlink_lanes(edge.first, edge.second));  // every lane direction once
}

TEST(CollectiveSelection, OneA100NodeAlwaysRings) {
  Platform p("dgx-a100-hdr");
  for (double bytes = 1024; bytes <= 1 << 30; bytes *= 8)
    EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, bytes), CollectiveAlgorithm::ring) << bytes;
}

TEST(CollectiveSelection, ManyNodesTreeForSmallRingForLarge) {
  Platform p("dgx-a100-hdr", {"cluster.nodes=16"});
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 128, 64 * 1024), CollectiveAlgorithm::tree);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 128, 1 << 30), CollectiveAlgorithm::ring);
  // Trees are for all-reduce only, as in NCCL.
  EXPECT_EQ(pick(p, CollectiveOp::all_gather, 128, 64 * 1024), CollectiveAlgorithm::ring);
}

TEST(CollectiveSelection, NvlsOnH100NodesForLargeMessages) {
  Platform p("dgx-h100-ndr");
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, 1 << 30), CollectiveAlgorithm::nvls);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, 1 << 30, CollectiveAlgorithm::ring),
            CollectiveAlgorithm::ring);
}

TEST(CollectiveSelection, NoNvlsWhenOneNodeOfTheGroupLacksIt) {
  Platform p("mixed-a100-h100");
  // Ranks 120..135 span the last A100 node and the first H100 node.
  std::vector<int> gpus(16);
  std::iota(gpus.begin(), gpus.end(), 120);
  const auto estimates = estimate_algorithms({CollectiveOp::all_reduce, gpus, 1 << 30, 1, {}}, *p.zone);
  for (const auto& e : estimates)
    EXPECT_NE(e.algorithm, CollectiveAlgorithm::nvls);
  // Two H100 nodes: NVLS is a candidate (intra-node in-switch phases).
  std::iota(gpus.begin(), gpus.end(), 128);
  const auto h100 = estimate_algorithms({CollectiveOp::all_reduce, gpus, 1 << 30, 1, {}}, *p.zone);
  EXPECT_TRUE(std::any_of(h100.begin(), h100.end(), [](const AlgorithmEstimate& e) {
    return e.algorithm == CollectiveAlgorithm::nvls;
  }));
}

TEST(CollectiveSelection, AskedAlgorithmIsHonouredWhenItApplies) {
  Platform p("dgx-a100-hdr", {"cluster.nodes=16"});
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 128, 1 << 30, CollectiveAlgorithm::tree),
            CollectiveAlgorithm::tree);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 128, 1024, CollectiveAlgorithm::hierarchical),
            CollectiveAlgorithm::hierarchical);
  // Not applicable: trees for all-gather, NVLS on A100, hierarchical in one node.
  EXPECT_EQ(pick(p, CollectiveOp::all_gather, 128, 1 << 30, CollectiveAlgorithm::tree),
            CollectiveAlgorithm::ring);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, 1 << 30, CollectiveAlgorithm::nvls),
            CollectiveAlgorithm::ring);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, 1 << 30, CollectiveAlgorithm::hierarchical),
            CollectiveAlgorithm::ring);
  EXPECT_EQ(pick(p, CollectiveOp::all_to_all, 16, 1 << 20, CollectiveAlgorithm::ring),
            CollectiveAlgorithm::direct);
}

TEST(CollectiveSelection, ClusterDefaultAppliesWhenTheTaskDoesNotAsk) {
  Platform p("dgx-a100-hdr", {"cluster.nodes=16", "cluster.collectives.algorithm=tree"});
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 128, 1 << 30), CollectiveAlgorithm::tree);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 128, 1 << 30, CollectiveAlgorithm::ring),
            CollectiveAlgorithm::ring);
}

TEST(CollectiveSelection, AutoPicksTheFastestEstimateButNeverHierarchical) {
  Platform p("dgx-h100-ndr", {"cluster.nodes=8"});
  const CollectiveRequest request{CollectiveOp::all_reduce, first(64), 256.0 * (1 << 20), 1,
                                  CollectiveAlgorithm::automatic};
  const auto estimates = estimate_algorithms(request, *p.zone);
  ASSERT_EQ(estimates.size(), 4u);  // ring, tree, nvls, hierarchical
  double best = 1e9;
  CollectiveAlgorithm fastest = CollectiveAlgorithm::ring;
  for (const auto& e : estimates) {
    EXPECT_GT(e.time_s, 0);
    if (e.algorithm != CollectiveAlgorithm::hierarchical && e.time_s < best) {
      best = e.time_s;
      fastest = e.algorithm;
    }
  }
  EXPECT_EQ(resolve_algorithm(request, *p.zone), fastest);
}

}  // namespace
}  // namespace trainsim::sim
