// RouteTable::route answers from a source's last two routes before its
// table (sim/replay/route_table.hpp): whatever the order in which a source
// asks for its destinations, each pair gets its own route, the same one
// every time.
#include "sim/replay/route_table.hpp"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

TEST(RouteTable, ASourceTurningAmongThreeDestinationsGetsEachPairsOwnRoute) {
  const platforms::ClusterSpec spec = testing::uniform_cluster(2, 4, 100e9, 1e-6);
  const auto engine = make_engine();
  const auto* zone = new ClusterZone(spec);  // owned by the engine
  RouteTable routes{*zone};
  // In turn (a pipeline stage's next and previous stages), then a third
  // destination that pushes the oldest out, then back to each.
  const std::pair<int, int> asked[] = {{0, 1}, {0, 5}, {0, 1}, {0, 5}, {0, 6}, {0, 1}, {0, 6},
                                       {0, 5}, {0, 5}, {3, 5}, {0, 1}, {3, 7}, {3, 5}, {0, 6}};
  std::map<std::pair<int, int>, const Route*> first;
  for (const auto& [src, dst] : asked) {
    const Route& route = routes.route(src, dst);
    EXPECT_EQ(route.src, src);
    EXPECT_EQ(route.dst, dst);
    EXPECT_FALSE(route.links.empty());
    const auto [known, inserted] = first.try_emplace({src, dst}, &route);
    EXPECT_EQ(known->second, &route) << src << " -> " << dst << ": another route than the first time";
  }
  // Other pairs' routes are other routes.
  EXPECT_NE(first.at({0, 1}), first.at({0, 5}));
  EXPECT_NE(first.at({0, 5}), first.at({3, 5}));
}

}  // namespace
}  // namespace trainsim::sim
