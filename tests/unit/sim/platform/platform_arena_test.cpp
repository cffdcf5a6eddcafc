// The platform's chunks in the trainsim executable's small-object pool
// (sim/platform/platform_arena.hpp): this test executable links that pool,
// as trainsim does. What a cluster zone builds there, for every node shape
// and fabric, is freed with the engine, so its chunks go back to the system
// (else sim::simulate would keep the platform's memory through the analyses
// after the replay); an object that lives on keeps them, readable.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/platform/platform_arena.hpp"
#include "sim/scenario/cluster_loader.hpp"

namespace trainsim::sim {
namespace {

TEST(PlatformArena, ChunksGoBackOnlyOnceNoObjectBuiltThereLivesOn) {
  const std::string text(100, 'x');
  std::unique_ptr<std::string> kept;
  std::vector<std::unique_ptr<std::vector<int>>> freed;
  {
    const PlatformArena::Building building;
    kept = std::make_unique<std::string>(text);
    for (int i = 0; i < 1000; ++i)
      freed.push_back(std::make_unique<std::vector<int>>(static_cast<std::size_t>(i % 100 + 1), i));
  }
  EXPECT_EQ(PlatformArena::objects_in_use(),
            2 + 2 * 1000);  // each object and its buffer; `freed`'s own from malloc
  freed.clear();
  EXPECT_EQ(PlatformArena::objects_in_use(), 2);
  EXPECT_FALSE(PlatformArena::release());
  EXPECT_EQ(*kept, text);
  kept.reset();
  EXPECT_EQ(PlatformArena::objects_in_use(), 0);
  EXPECT_TRUE(PlatformArena::release());
  // Built again, in chunks of its own.
  {
    const PlatformArena::Building building;
    kept = std::make_unique<std::string>(text);
  }
  EXPECT_EQ(*kept, text);
  kept.reset();
  EXPECT_TRUE(PlatformArena::release());
}

// A fresh process (one per test) builds a zone as sim::simulate does, the
// cluster read first: every object its constructor allocates in the
// platform's chunks (at least one per host and link direction) is freed by
// the engine's destruction, so the chunks go back. A lazily filled table
// or a callback hooked during the build would keep them.
void expect_every_object_freed_with_the_engine(const std::string& yaml) {
  const auto spec = scenario::parse_cluster_text(yaml, "t.yaml");
  auto engine = make_engine();
  auto* zone = new ClusterZone(spec);                                 // owned by the engine
  EXPECT_GT(PlatformArena::objects_in_use(), 3 * zone->gpu_count());  // a host and two directions each
  engine.reset();
  EXPECT_EQ(PlatformArena::objects_in_use(), 0);
  EXPECT_TRUE(PlatformArena::release());
}

TEST(PlatformArena, EngineFreesEveryObjectOfARailOptimisedClusterWithNvlsSwitches) {
  expect_every_object_freed_with_the_engine("cluster: {preset: dgx-h100-ndr, nodes: 8}\n");
}

TEST(PlatformArena, EngineFreesEveryObjectOfCubeMeshNodesOnPcie) {
  expect_every_object_freed_with_the_engine("cluster: {preset: dgx1-v100, nodes: 2}\n");
}

TEST(PlatformArena, EngineFreesEveryObjectOfFullMeshNodes) {
  expect_every_object_freed_with_the_engine("cluster: {preset: mi300x-roce, nodes: 2}\n");
}

TEST(PlatformArena, EngineFreesEveryObjectOfNvlinkDomainsOfTrays) {
  expect_every_object_freed_with_the_engine("cluster: {preset: gb200-nvl72, nodes: 36}\n");
}

TEST(PlatformArena, EngineFreesEveryObjectOfAThreeLevelFatTree) {
  expect_every_object_freed_with_the_engine(
      "cluster: {gpu: A100, nodes: 8, fabric: {topology: fat_tree, levels: 3, nodes_per_leaf: 2, "
      "leaves_per_pod: 2}}\n");
}

TEST(PlatformArena, EngineFreesEveryObjectOfADragonfly) {
  expect_every_object_freed_with_the_engine(
      "cluster: {gpu: A100, nodes: 16, gpus_per_node: 1, fabric: {topology: dragonfly, nodes_per_router: 2, "
      "routers_per_group: 4, local_bandwidth: 800Gbps, global_bandwidth: 400Gbps}}\n");
}

TEST(PlatformArena, EngineFreesEveryObjectOfATorus) {
  expect_every_object_freed_with_the_engine(
      "cluster: {gpu: A100, nodes: 32, gpus_per_node: 1, fabric: {topology: torus, dims: [8, 4], "
      "link_bandwidth: 100Gbps}}\n");
}

}  // namespace
}  // namespace trainsim::sim
