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
#include "support/preset_platform.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

using Platform = testing::PresetPlatform;

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

// Link directions (a, b) the rings' hops use, and how often.
std::map<std::pair<int, int>, int> hops_of(const std::vector<std::vector<int>>& rings,
                                           const ClusterZone& zone, bool inside_nodes_only) {
  std::map<std::pair<int, int>, int> used;
  for (const auto& ring : rings)
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int a = ring[i], b = ring[(i + 1) % ring.size()];
      if (!inside_nodes_only || zone.node_of(a) == zone.node_of(b))
        ++used[{a, b}];
    }
  return used;
}

TEST(CollectiveLayout, FullMeshRingsUseEveryLinkDirectionOnce) {
  Platform p("mi300x-roce", {"cluster.nodes=2"});
  // One node: 7 rings, RCCL's count, 56 link directions each once.
  const auto rings = ring_channels(layout_of(first(8), *p.zone), *p.zone);
  ASSERT_EQ(rings.size(), 7u);
  const auto used = hops_of(rings, *p.zone, false);
  EXPECT_EQ(used.size(), 56u);
  for (const auto& [hop, count] : used)
    EXPECT_EQ(count, 1) << hop.first << " -> " << hop.second;
  // 4 GPUs have no 3 disjoint rings: all 6 directed cycles, each direction twice.
  const auto four = ring_channels(layout_of(first(4), *p.zone), *p.zone);
  EXPECT_EQ(four.size(), 6u);
  for (const auto& [hop, count] : hops_of(four, *p.zone, false))
    EXPECT_EQ(count, 2);
  // Two nodes: one ring per NIC, each node's 56 link directions once, and
  // every hop between nodes on one rail (the same NIC index on both sides).
  const auto across = ring_channels(layout_of(first(16), *p.zone), *p.zone);
  ASSERT_EQ(across.size(), 8u);
  const auto inside = hops_of(across, *p.zone, true);
  EXPECT_EQ(inside.size(), 2 * 56u);
  for (const auto& [hop, count] : inside)
    EXPECT_EQ(count, 1);
  for (const auto& ring : across)
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int a = ring[i], b = ring[(i + 1) % ring.size()];
      if (p.zone->node_of(a) != p.zone->node_of(b)) {
        EXPECT_EQ(p.zone->nic_index(a), p.zone->nic_index(b)) << a << " -> " << b;
      }
    }
}

TEST(CollectiveSelection, Mi300xNodeRingsAtEverySize) {
  // RCCL skips trees inside one MI300X node; here the rings' estimate wins.
  Platform p("mi300x-roce");
  for (double bytes = 1024; bytes <= 1 << 30; bytes *= 8)
    EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, bytes), CollectiveAlgorithm::ring) << bytes;
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

// NCCL on a GB200 NVL72 (MNNVL) takes a rack as one node of 72 local ranks:
// NVLS inside it, NVLSTree (or rings and trees) across racks.
TEST(CollectiveSelection, Nvl72ReducesInTheRackSwitchAndTreesAcrossRacks) {
  Platform p("gb200-nvl72", {"cluster.nodes=36"});
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 72, 1 << 30), CollectiveAlgorithm::nvls);
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 8, 1 << 30), CollectiveAlgorithm::nvls);  // two trays
  EXPECT_EQ(pick(p, CollectiveOp::all_reduce, 144, 1 << 30), CollectiveAlgorithm::nvls_tree);
  // An all-gather's ring moves (n-1)/n S per port at the ring rate, NVLS all
  // S at its multimem share (0.6): rings, as on one H100 node; across racks
  // NVLS would need IB SHARP anyway.
  EXPECT_EQ(pick(p, CollectiveOp::all_gather, 72, 1 << 30), CollectiveAlgorithm::ring);
  EXPECT_EQ(pick(p, CollectiveOp::all_gather, 144, 1 << 30), CollectiveAlgorithm::ring);
  const auto layout = layout_of(first(144), *p.zone);
  EXPECT_EQ(layout.domains, (std::vector<int>{0, 1}));
  // A rack's 72 NICs offer more rails than rings use.
  EXPECT_EQ(ring_channels(layout, *p.zone).size(), static_cast<std::size_t>(platforms::kMaxRingRails));
}

// Megatron's rank order (tp fastest) puts a TP 8 group and an EP group of
// 64 GPUs (tp 8 x ep 8, or ep 64 of tp 1) on consecutive ranks: inside one
// NVLink domain when the domain holds them (a rack that gives a job 16 of its
// 18 trays is a 64-GPU domain to it), each all-to-all all on NVLink.
TEST(CollectiveLayout, ExpertGroupOfSixtyFourGpusIsOneNvlinkDomain) {
  Platform p("gb200-nvl72", {"cluster.nodes=32", "cluster.nvlink_domain=64"});
  std::vector<int> second_group(64);
  std::iota(second_group.begin(), second_group.end(), 64);
  const auto layout = layout_of(second_group, *p.zone);
  EXPECT_TRUE(layout.single_domain());
  for (int peer : {65, 100, 127})
    EXPECT_EQ(p.zone->route_names(64, peer).size(), 2u);  // two NVLink ports, no NIC
  // With the rack's 72: the second 64-GPU group straddles two racks.
  const auto racks = scenario::load_cluster("gb200-nvl72", {"cluster.nodes=32"});
  EXPECT_EQ(racks.locate(64).domain, 0);
  EXPECT_EQ(racks.locate(127).domain, 1);
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

// Across nodes NCCL's tuner weighs ring, tree and NVLSTree: hierarchical is
// not an NCCL algorithm and NVLS across nodes needs IB SHARP.
TEST(CollectiveSelection, AutoPicksTheFastestEstimateNcclWouldConsider) {
  Platform p("dgx-h100-ndr", {"cluster.nodes=8"});
  const CollectiveRequest request{CollectiveOp::all_reduce, first(64), 256.0 * (1 << 20), 1,
                                  CollectiveAlgorithm::automatic};
  const auto estimates = estimate_algorithms(request, *p.zone);
  ASSERT_EQ(estimates.size(), 5u);  // ring, tree, nvls_tree, nvls, hierarchical
  double best = 1e9;
  CollectiveAlgorithm fastest = CollectiveAlgorithm::ring;
  for (const auto& e : estimates) {
    EXPECT_GT(e.time_s, 0);
    if (e.algorithm != CollectiveAlgorithm::hierarchical && e.algorithm != CollectiveAlgorithm::nvls &&
        e.time_s < best) {
      best = e.time_s;
      fastest = e.algorithm;
    }
  }
  EXPECT_EQ(resolve_algorithm(request, *p.zone), fastest);
}

}  // namespace
}  // namespace trainsim::sim
