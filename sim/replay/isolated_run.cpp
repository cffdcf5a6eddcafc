#include "sim/replay/isolated_run.hpp"

#include <algorithm>
#include <functional>

namespace trainsim::sim {
bool IsolatedRunner::take_links(const Route& route, RouteTable& routes, const LinkClaims& claims) {
  for (const std::uint32_t link : route.links) {
    if (using_Bps_.size() <= link) {
      using_Bps_.resize(routes.link_count(), 0.0);
      most_Bps_.resize(routes.link_count(), 0.0);
    }
    if (most_Bps_[link] == 0)
      touched_.push_back(link);
    const double using_Bps = using_Bps_[link] += route.bound_Bps;
    most_Bps_[link] = std::max(most_Bps_[link], using_Bps);
    if (using_Bps > routes.capacity_Bps(link) * (1 + kClaimSlack) || !claims.fits(link, using_Bps))
      return false;
  }
  return true;
}

bool IsolatedRunner::occupy(const ScheduledFlow& flow, RouteTable& routes, const LinkClaims& claims,
                            IsolatedRun& out) {
  const auto index = static_cast<std::uint32_t>(out.flows.size());
  if (flow.request.delay_s > 0) {
    // A step's delay loads no link (SimGrid counts it as latency): the flow
    // takes its links when the delay is over, so that a rank's sends that
    // overlap only in their delays still run computed.
    begins_.emplace_back(flow.start_s + flow.request.delay_s, index);
    std::push_heap(begins_.begin(), begins_.end(), std::greater<>());
  } else if (!take_links(*flow.route, routes, claims)) {
    return false;
  }
  out.flows.push_back(flow);
  heap_.emplace_back(flow.end_s, index);
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  return true;
}

bool IsolatedRunner::launch(const FlowRequest& request, double start_s, RouteTable& routes,
                            const LinkClaims& claims, IsolatedRun& out) {
  const auto tag = static_cast<std::size_t>(request.tag);
  if (route_by_tag_.size() <= tag)
    route_by_tag_.resize(tag + 1, nullptr);
  Route*& route = route_by_tag_[tag];
  if (route == nullptr || route->src != request.src || route->dst != request.dst)
    route = &routes.route(request.src, request.dst);
  // As SimGrid dates it: the latency (and the step's delay, charged as
  // latency) ends, then the bytes move at the bound.
  const double bytes = static_cast<double>(std::llround(request.bytes));
  const double latency_s = request.delay_s > 0 ? route->latency_s + request.delay_s : route->latency_s;
  const double end_s = (start_s + latency_s) + bytes / route->bound_Bps;
  return occupy({request, route, start_s, end_s}, routes, claims, out);
}

void IsolatedRunner::reset() {
  for (const std::uint32_t link : touched_) {
    using_Bps_[link] = 0;
    most_Bps_[link] = 0;
  }
  touched_.clear();
  heap_.clear();
  begins_.clear();
  requests_.clear();
}

bool IsolatedRunner::finish_all(Collective& machine, RouteTable& routes, const LinkClaims& claims,
                                IsolatedRun& out) {
  // Flows finish in order of their end; ties in the order they started. A
  // delayed flow takes its links when its delay is over, before any flow
  // that ends at that instant gives them back (the cautious order).
  while (!heap_.empty()) {
    if (!begins_.empty() && begins_.front().first <= heap_.front().first) {
      std::pop_heap(begins_.begin(), begins_.end(), std::greater<>());
      const auto index = begins_.back().second;
      begins_.pop_back();
      if (!take_links(*out.flows[index].route, routes, claims))
        return false;
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const auto [end_s, index] = heap_.back();
    heap_.pop_back();
    out.finish_order.push_back(index);
    out.end_s = end_s;
    const ScheduledFlow& flow = out.flows[index];
    for (const std::uint32_t link : flow.route->links)
      using_Bps_[link] -= flow.route->bound_Bps;
    machine.on_flow_done(flow.request.tag, requests_);
    for (const auto& request : requests_)
      if (!launch(request, end_s, routes, claims, out))
        return false;
    requests_.clear();
  }
  for (const std::uint32_t link : touched_)
    out.claims.emplace_back(link, most_Bps_[link]);
  return true;
}

bool IsolatedRunner::run(Collective& machine, double start_s, RouteTable& routes, const LinkClaims& claims,
                         IsolatedRun& out) {
  out = IsolatedRun{};
  out.end_s = start_s;
  machine.start(requests_);
  bool fits = std::all_of(requests_.begin(), requests_.end(), [&](const FlowRequest& request) {
    return launch(request, start_s, routes, claims, out);
  });
  requests_.clear();
  fits = fits && finish_all(machine, routes, claims, out);
  reset();
  return fits;
}

bool IsolatedRunner::resume(Collective& machine, const std::vector<ScheduledFlow>& in_flight, double now,
                            RouteTable& routes, const LinkClaims& claims, IsolatedRun& out) {
  out = IsolatedRun{};
  out.end_s = now;
  bool fits = std::all_of(in_flight.begin(), in_flight.end(),
                          [&](const ScheduledFlow& flow) { return occupy(flow, routes, claims, out); });
  fits = fits && finish_all(machine, routes, claims, out);
  reset();
  return fits;
}

}  // namespace trainsim::sim
