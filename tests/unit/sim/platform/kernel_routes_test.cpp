// ClusterZone::get_local_route, which SimGrid calls for every communication
// it starts, walks a pair's route once and remembers it. What it gives on
// the second call must be what the walk gives: the same link directions in
// route order, the same latency, a latency a perturbation adds to one of
// the links after the first call, and, once the links are folded, the
// orbits' representatives rather than the links remembered before; and the
// same through a caller's memo of the pair (expect_route), which a fold
// makes stale and an expectation for another pair leaves unread.
#include <gtest/gtest.h>

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Link.hpp>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

namespace kr = simgrid::kernel::routing;

// 2 nodes of 4 GPUs, one NIC per GPU, one switch; 1 us per route.
struct Platform {
  platforms::ClusterSpec spec = testing::uniform_cluster(2, 4, 100e9, 1e-6);
  std::unique_ptr<simgrid::s4u::Engine> engine = make_engine();
  ClusterZone* zone = new ClusterZone(spec);  // owned by the engine
};

// SimGrid's links of a route (the kernel's objects: they have no public
// names) and its latency.
struct Asked {
  std::vector<const void*> links;
  double latency_s = 0;
};

Asked ask(ClusterZone& zone, int src, int dst, ClusterZone::RouteMemo* memo = nullptr, int expected_src = -1,
          int expected_dst = -1) {
  if (memo != nullptr)  // as the replay does just before SimGrid starts a communication
    zone.expect_route(expected_src, expected_dst, *memo);
  kr::Route route;
  Asked out;
  zone.get_local_route(zone.host(src)->get_netpoint(), zone.host(dst)->get_netpoint(), &route,
                       &out.latency_s);
  for (const auto* link : route.link_list_)
    out.links.push_back(link);
  return out;
}

// The walk's answer: its link directions and latency.
Asked walked(const ClusterZone& zone, int src, int dst, std::vector<simgrid::s4u::Link*>* links = nullptr) {
  Asked out;
  out.latency_s = zone.for_each_link(src, dst, [&](simgrid::s4u::Link* link) {
    out.links.push_back(link->get_impl());
    if (links != nullptr)
      links->push_back(link);
  });
  return out;
}

TEST(KernelRoutes, ARouteAskedAgainIsTheWalksLinksAndLatency) {
  Platform p;
  const auto expected = walked(*p.zone, 1, 6);
  ASSERT_EQ(expected.links.size(), 2U);  // NIC up, NIC down through the switch
  for (int time = 0; time < 3; ++time) {
    const auto got = ask(*p.zone, 1, 6);
    EXPECT_EQ(got.links, expected.links);
    EXPECT_EQ(got.latency_s, expected.latency_s);
  }
  EXPECT_EQ(ask(*p.zone, 6, 1).links, walked(*p.zone, 6, 1).links);  // the other direction: its own
  EXPECT_EQ(ask(*p.zone, 1, 2).links, walked(*p.zone, 1, 2).links);  // inside a node: NVLink
  EXPECT_EQ(p.zone->remembered_routes(), 3U);
}

TEST(KernelRoutes, LatencyAddedToALinkAfterTheFirstAskIsCharged) {
  Platform p;
  const double before = ask(*p.zone, 1, 6).latency_s;
  std::vector<simgrid::s4u::Link*> links;
  walked(*p.zone, 1, 6, &links);
  auto* link = links.front();
  p.zone->note_link_latency_change();  // as a perturbation does (sim/perturbations/driver.cpp)
  link->set_latency(3e-6);             // and raises it
  EXPECT_DOUBLE_EQ(ask(*p.zone, 1, 6).latency_s, before + 3e-6);
  link->set_latency(0);
  EXPECT_EQ(ask(*p.zone, 1, 6).latency_s, before);
}

TEST(KernelRoutes, FoldingTheLinksForgetsTheRoutesRemembered) {
  Platform p;
  const auto unfolded = ask(*p.zone, 5, 2);
  // The rotation of the two nodes onto each other.
  std::vector<int> image(8);
  for (int g = 0; g < 8; ++g)
    image[static_cast<std::size_t>(g)] = (g + 4) % 8;
  ASSERT_EQ(p.zone->automorphism_problem(image), "");
  p.zone->fold_links(image);
  EXPECT_EQ(p.zone->remembered_routes(), 0U);
  const auto folded = ask(*p.zone, 5, 2);
  EXPECT_EQ(folded.links, walked(*p.zone, 5, 2).links);  // the orbits' representatives
  EXPECT_NE(folded.links, unfolded.links);               // GPU 5 leaves through its image on node 0
  EXPECT_EQ(folded.latency_s, unfolded.latency_s);
}

TEST(KernelRoutes, ARouteAskedThroughAMemoIsTheWalksLinksAndLatency) {
  Platform p;
  const auto expected = walked(*p.zone, 1, 6);
  ClusterZone::RouteMemo memo;
  for (int time = 0; time < 3; ++time) {  // the first fills the memo, the others read it
    const auto got = ask(*p.zone, 1, 6, &memo, 1, 6);
    EXPECT_EQ(got.links, expected.links);
    EXPECT_EQ(got.latency_s, expected.latency_s);
  }
  EXPECT_EQ(p.zone->remembered_routes(), 1U);
  // The memo of 1 -> 6 named for another pair's call is not read.
  EXPECT_EQ(ask(*p.zone, 6, 1, &memo, 1, 6).links, walked(*p.zone, 6, 1).links);
  EXPECT_EQ(ask(*p.zone, 1, 6, &memo, 1, 6).links, expected.links);  // and still right for its own
}

TEST(KernelRoutes, AMemoFilledBeforeTheLinksAreFoldedIsNotReadAfter) {
  Platform p;
  ClusterZone::RouteMemo memo;
  const auto unfolded = ask(*p.zone, 5, 2, &memo, 5, 2);
  std::vector<int> image(8);
  for (int g = 0; g < 8; ++g)
    image[static_cast<std::size_t>(g)] = (g + 4) % 8;
  p.zone->fold_links(image);
  const auto folded = ask(*p.zone, 5, 2, &memo, 5, 2);
  EXPECT_EQ(folded.links, walked(*p.zone, 5, 2).links);  // the representatives, not the memo's links
  EXPECT_NE(folded.links, unfolded.links);
  EXPECT_EQ(ask(*p.zone, 5, 2, &memo, 5, 2).links, folded.links);  // refilled
}

}  // namespace
}  // namespace trainsim::sim
