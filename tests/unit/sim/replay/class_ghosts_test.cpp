// The class fold's images of the representative's claims and routes
// (sim/replay/class_ghosts.hpp): a flow or an isolated collective of a task
// with images claims the image routes too (so that a collective across
// replicas sees every replica's claims on its links), a claim on an image
// link displaces the representative's collective as its image's would be,
// and a recorded route's images are numbered for the expansion.
#include "sim/replay/class_ghosts.hpp"

#include <gtest/gtest.h>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

// 2 nodes of 4 GPUs, one NIC per GPU (100 GB/s), one switch. The fold's
// cycle swaps the nodes (GPU g and g + 4); task 0 has images, task 1 not.
struct Platform {
  platforms::ClusterSpec spec = testing::uniform_cluster(2, 4, 100e9, 1e-6);
  std::unique_ptr<simgrid::s4u::Engine> engine = make_engine();
  ClusterZone* zone = new ClusterZone(spec);  // owned by the engine
  ReplicaFold fold;
  RouteTable routes{*zone};
  LinkClaims claims{routes};
  Platform() {
    fold.classes = true;
    fold.order = 2;
    fold.task_image = {2, 1, 0};
    const int gpus = zone->gpu_count();
    fold.endpoint_image.resize(static_cast<std::size_t>(gpus + spec.domain_count()));
    for (int g = 0; g < gpus; ++g)
      fold.endpoint_image[static_cast<std::size_t>(g)] = (g + 4) % 8;
    for (int d = 0; d < spec.domain_count(); ++d)
      fold.endpoint_image[static_cast<std::size_t>(gpus + d)] = gpus + (d + 1) % 2;
  }
  // Whether every link of `route` can take `Bps` more.
  bool fits(const Route& route, double Bps) const {
    for (const std::uint32_t link : route.links)
      if (!claims.fits(link, Bps))
        return false;
    return true;
  }
};

TEST(ClassGhosts, AFlowsImagesClaimTheImageRoute) {
  Platform p;
  ClassGhosts ghosts(p.fold, p.routes, p.claims);
  EXPECT_TRUE(ghosts.has_images(0));
  EXPECT_FALSE(ghosts.has_images(1));
  Route& mine = p.routes.route(0, 5);
  Route& image = p.routes.route(4, 1);
  ASSERT_EQ(image.links.size(), mine.links.size());
  ASSERT_TRUE(p.fits(image, image.bound_Bps));
  std::vector<workloads::TaskId> displaced;
  ghosts.add_flow(mine, displaced);
  // The image route now holds the image flow's bound: another flow's
  // would push its NICs over their bandwidth.
  EXPECT_FALSE(p.fits(image, image.bound_Bps));
  EXPECT_TRUE(p.fits(image, 0.0));
  ghosts.remove_flow(mine);
  EXPECT_TRUE(p.fits(image, image.bound_Bps));
}

TEST(ClassGhosts, AClaimOnAnImageLinkDisplacesTheRepresentativesCollective) {
  Platform p;
  ClassGhosts ghosts(p.fold, p.routes, p.claims);
  Route& mine = p.routes.route(0, 5);
  Route& image = p.routes.route(4, 1);
  // Task 0's collective computed alone on route 0 -> 5, half its bound.
  IsolatedRun run;
  run.flows.push_back({FlowRequest{0, 5, 1e6, 0, 0}, &mine, 0.0, 1.0});
  for (const std::uint32_t link : mine.links)
    run.claims.emplace_back(link, mine.bound_Bps / 2);
  p.claims.add_isolated(0, run.claims);
  ghosts.add_isolated(0, run);
  EXPECT_FALSE(p.fits(image, image.bound_Bps));
  EXPECT_TRUE(p.fits(image, image.bound_Bps / 2));
  // A flow on the image route pushes it over: task 0 is displaced, as its
  // image would be in the full replay.
  std::vector<workloads::TaskId> displaced;
  p.claims.add_flow(image, displaced);
  ASSERT_EQ(displaced.size(), 1u);
  EXPECT_EQ(displaced[0], 0u);
  p.claims.remove_flow(image);
  p.claims.remove_isolated(0, run.claims);
  ghosts.remove_isolated(0);
  EXPECT_TRUE(p.fits(image, image.bound_Bps));
  EXPECT_TRUE(p.fits(mine, mine.bound_Bps));
}

TEST(ClassGhosts, NumbersTheImagesOfRecordedRoutes) {
  Platform p;
  ClassGhosts ghosts(p.fold, p.routes, p.claims);
  analysis::Timeline timeline;
  FlowRecorder recorder(timeline, p.routes);
  Route& mine = p.routes.route(0, 5);
  Route& unrecorded = p.routes.route(1, 6);
  std::vector<workloads::TaskId> displaced;
  ghosts.add_flow(mine, displaced);
  ghosts.add_flow(unrecorded, displaced);
  recorder.number_links(mine);
  const auto links_before = timeline.links.size();
  const auto images = ghosts.number_images(recorder);
  ASSERT_EQ(images.size(), 1u);  // the unrecorded route has none
  ASSERT_EQ(images.count(mine.timeline_first), 1u);
  const Route& image = p.routes.route(4, 1);
  EXPECT_EQ(images.at(mine.timeline_first), std::vector<std::uint32_t>{image.timeline_first});
  EXPECT_EQ(timeline.links.size(), links_before + image.links.size());  // its own NICs, numbered now
}

}  // namespace
}  // namespace trainsim::sim
