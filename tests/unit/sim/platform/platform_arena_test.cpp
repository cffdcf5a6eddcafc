// The platform's chunks in the trainsim executable's small-object pool
// (sim/platform/platform_arena.hpp): this test executable links that pool,
// as trainsim does. What a cluster zone builds there is freed with the
// engine, so its chunks go back to the system (else sim::simulate would keep
// the platform's memory through the analyses after the replay); an object
// that lives on keeps them, readable.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/platform/platform_arena.hpp"
#include "support/test_cluster.hpp"

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

TEST(PlatformArena, ClusterZoneBuildsThereAndTheEngineFreesEveryObjectOfIt) {
  const auto spec = testing::uniform_cluster(4, 8, 100e9, 1e-6);
  auto engine = make_engine();
  auto* zone = new ClusterZone(spec);  // owned by the engine
  EXPECT_EQ(zone->gpu_count(), 32);
  // Several per host (32) and link direction (2 x 32 NVLink ports, 2 x 32 NICs): 1,066 here.
  EXPECT_GT(PlatformArena::objects_in_use(), 32 + 2 * 64);
  engine.reset();
  EXPECT_EQ(PlatformArena::objects_in_use(), 0);
  EXPECT_TRUE(PlatformArena::release());
}

}  // namespace
}  // namespace trainsim::sim
