// The tuner's choice shared by groups of one shape (sim/collectives/
// factory.cpp, chosen_algorithm): a group gets the choice its own tuning
// gives, whether that is a choice another group of its shape made or its
// own. Each TEST builds one platform in its own process; none runs a
// simulation.
#include <gtest/gtest.h>

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>

#include "sim/collectives/collectives.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "support/preset_platform.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

using Platform = testing::PresetPlatform;

// One GPU (local rank `rail`) on each of `count` nodes from `first_node`.
std::vector<int> across_nodes(int first_node, int count, int rail) {
  std::vector<int> gpus;
  for (int k = 0; k < count; ++k)
    gpus.push_back((first_node + k) * 8 + rail);
  return gpus;
}

CollectiveAlgorithm pick(const Platform& p, const std::vector<int>& gpus, double bytes) {
  return resolve_algorithm({CollectiveOp::all_reduce, gpus, bytes, 1, CollectiveAlgorithm::automatic},
                           *p.zone);
}

// What the tuner picks for the group alone, with nothing remembered.
CollectiveAlgorithm fresh_pick(const Platform& p, const std::vector<int>& gpus, double bytes) {
  p.zone->forget_tuner_choices();
  const auto algorithm = pick(p, gpus, bytes);
  p.zone->forget_tuner_choices();
  return algorithm;
}

void scale_link(const std::string& name, double factor) {
  for (const char* direction : {"_UP", "_DOWN"}) {
    auto* link = simgrid::s4u::Engine::get_instance()->link_by_name(name + direction);
    link->set_bandwidth(link->get_bandwidth() * factor);
  }
}

// Three groups of one shape (one GPU of rail 0 on each of 8 nodes, all
// under one rail switch): two on links alike share the ring; the third
// crosses a NIC at an eighth of its bandwidth, where the tree's loads
// weigh less, and gets the tree its own tuning gives.
TEST(TunerShapes, GroupOnASlowerLinkGetsItsOwnChoice) {
  Platform p("dgx-h100-ndr", {"cluster.nodes=16"});
  scale_link("node15-nic0", 1.0 / 8);
  const double bytes = 1 << 20;
  EXPECT_EQ(pick(p, across_nodes(0, 8, 0), bytes), CollectiveAlgorithm::ring);
  EXPECT_EQ(pick(p, across_nodes(4, 8, 0), bytes), CollectiveAlgorithm::ring);
  EXPECT_EQ(pick(p, across_nodes(8, 8, 0), bytes), CollectiveAlgorithm::tree);
  EXPECT_EQ(fresh_pick(p, across_nodes(8, 8, 0), bytes), CollectiveAlgorithm::tree);
  EXPECT_EQ(fresh_pick(p, across_nodes(4, 8, 0), bytes), CollectiveAlgorithm::ring);
}

// Groups of a few shapes at every offset over leaves of four nodes (routes
// through the spine or not, over uplinks of other groups' images), at sizes
// from latency- to bandwidth-bound: each remembered choice, asked in turn,
// is the one the group's own tuning gives with nothing remembered.
TEST(TunerShapes, EveryGroupGetsTheChoiceOfItsOwnTuning) {
  Platform p("dgx-h100-ndr", {"cluster.nodes=16", "cluster.fabric.nodes_per_leaf=4"});
  scale_link("node13-nic3", 1.0 / 4);
  std::vector<std::vector<int>> groups;
  for (int rail : {0, 3})
    for (int count : {3, 4, 8})
      for (int first_node = 0; first_node + count <= 16; ++first_node)
        groups.push_back(across_nodes(first_node, count, rail));
  int differing_sizes = 0;
  for (double bytes = 64 * 1024; bytes <= (1 << 30); bytes *= 4) {
    p.zone->forget_tuner_choices();
    std::vector<CollectiveAlgorithm> remembered;
    for (const auto& gpus : groups)
      remembered.push_back(pick(p, gpus, bytes));
    bool differ = false;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      EXPECT_EQ(remembered[g], fresh_pick(p, groups[g], bytes)) << bytes << " group " << g;
      differ = differ || remembered[g] != remembered.front();
    }
    differing_sizes += differ ? 1 : 0;
  }
  // Some sizes pick differently for some groups: the choices are not all one.
  EXPECT_GT(differing_sizes, 0);
}

}  // namespace
}  // namespace trainsim::sim
