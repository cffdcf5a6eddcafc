#include "sim/replay/class_ghosts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/replay/class_fold.hpp"

namespace trainsim::sim {

ClassGhosts::ClassGhosts(const ReplicaFold& fold, RouteTable& routes, LinkClaims& claims)
    : fold_(fold), routes_(routes), claims_(claims) {}

const std::vector<Route*>& ClassGhosts::images(const Route& route) {
  const auto [it, fresh] = images_.try_emplace(&route);
  if (!fresh)
    return it->second;
  seen_.push_back(&route);
  auto& out = it->second;
  int src = route.src, dst = route.dst;
  for (int k = 1; k < fold_.order; ++k) {
    src = fold_.endpoint_image[static_cast<std::size_t>(src)];
    dst = fold_.endpoint_image[static_cast<std::size_t>(dst)];
    Route& image = routes_.route(src, dst);
    if (image.links.size() != route.links.size())
      throw FoldRefuted(
          fmt::format("the route {} -> {} is no image of {} -> {} (P3)", src, dst, route.src, route.dst));
    out.push_back(&image);
  }
  return out;
}

void ClassGhosts::add_flow(const Route& route, std::vector<workloads::TaskId>& displaced) {
  for (Route* image : images(route))
    claims_.add_flow(*image, displaced);
}

void ClassGhosts::remove_flow(const Route& route) {
  for (Route* image : images(route))
    claims_.remove_flow(*image);
}

void ClassGhosts::add_isolated(workloads::TaskId id, const IsolatedRun& run) {
  // Each claimed link's place on one of the run's routes (link, route,
  // position), the routes distinct; image k of the link is the link at the
  // same place on the route's image k.
  std::vector<const Route*> routes;
  for (const auto& flow : run.flows)
    routes.push_back(flow.route);
  std::sort(routes.begin(), routes.end());
  routes.erase(std::unique(routes.begin(), routes.end()), routes.end());
  struct Place {
    std::uint32_t link;
    std::uint32_t route;
    std::uint32_t position;
    bool operator<(const Place& o) const { return link < o.link; }
  };
  std::vector<Place> places;
  for (std::uint32_t r = 0; r < routes.size(); ++r)
    for (std::uint32_t j = 0; j < routes[r]->links.size(); ++j)
      places.push_back({routes[r]->links[j], r, j});
  std::stable_sort(places.begin(), places.end());
  auto& ghosts = isolated_[id];
  ghosts.assign(static_cast<std::size_t>(fold_.order - 1), {});
  for (const auto& [link, Bps] : run.claims) {
    const auto at = std::lower_bound(places.begin(), places.end(), Place{link, 0, 0});
    if (at == places.end() || at->link != link)
      throw FoldRefuted("an isolated collective claims a link none of its routes crosses");
    const auto& image_routes = images(*routes[at->route]);
    for (std::size_t k = 0; k < image_routes.size(); ++k)
      ghosts[k].emplace_back(image_routes[k]->links[at->position], Bps);
  }
  for (const auto& claims : ghosts)
    claims_.add_isolated(id, claims);
}

void ClassGhosts::remove_isolated(workloads::TaskId id) {
  const auto it = isolated_.find(id);
  if (it == isolated_.end())
    return;
  for (const auto& claims : it->second)
    claims_.remove_isolated(id, claims);
  isolated_.erase(it);
}

std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> ClassGhosts::number_images(
    FlowRecorder& recorder) {
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> firsts;
  for (const Route* route : seen_) {
    if (route->timeline_first == Route::kUnrecorded || route->links.empty() ||
        firsts.count(route->timeline_first) > 0)
      continue;
    auto& out = firsts[route->timeline_first];
    for (Route* image : images_.at(route)) {
      recorder.number_links(*image);
      out.push_back(image->timeline_first);
    }
  }
  return firsts;
}

}  // namespace trainsim::sim
