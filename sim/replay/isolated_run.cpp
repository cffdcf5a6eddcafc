#include "sim/replay/isolated_run.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <unordered_map>

namespace trainsim::sim {
bool IsolatedRunner::take_links(const Route& route, RouteTable& routes, const LinkClaims& claims) {
  // Read once: the loads' stores could alias them for the compiler.
  const double bound_Bps = route.bound_Bps;
  LinkLoad* const loads = load_.data();
  for (const std::uint32_t link : route.links) {
    LinkLoad& load = loads[link];
    if (load.most_Bps == 0)
      touched_.push_back(link);
    const double using_Bps = load.using_Bps += bound_Bps;
    load.most_Bps = std::max(load.most_Bps, using_Bps);
    const double limit_Bps = routes.capacity_Bps(link) * (1 + kClaimSlack);
    if (using_Bps > limit_Bps || !claims.fits_under(link, using_Bps, limit_Bps))
      return false;
  }
  return true;
}

bool IsolatedRunner::occupy(const ScheduledFlow& flow, RouteTable& routes, const LinkClaims& claims,
                            IsolatedRun& out) {
  out.flows.push_back(flow);
  return take(out.flows.back(), routes, claims, out);
}

bool IsolatedRunner::take(const ScheduledFlow& flow, RouteTable& routes, const LinkClaims& claims,
                          const IsolatedRun& out) {
  if (flow.request.delay_s > 0) {
    // A step's delay loads no link (SimGrid counts it as latency): the flow
    // takes its links when the delay is over, so that a rank's sends that
    // overlap only in their delays still run computed.
    begins_.emplace_back(flow.start_s + flow.request.delay_s,
                         static_cast<std::uint32_t>(out.flows.size() - 1));
    std::push_heap(begins_.begin(), begins_.end(), std::greater<>());
    return true;
  }
  return take_links(*flow.route, routes, claims);
}

bool IsolatedRunner::launch(const FlowRequest& request, double start_s, RouteTable& routes,
                            const LinkClaims& claims, IsolatedRun& out) {
  const auto tag = static_cast<std::size_t>(request.tag);
  if (by_tag_.size() <= tag)
    by_tag_.resize(tag + 1);
  TagDates& dates = by_tag_[tag];
  const std::uint64_t bytes_bits = std::bit_cast<std::uint64_t>(request.bytes);
  const std::uint64_t delay_bits = std::bit_cast<std::uint64_t>(request.delay_s);
  if (dates.route == nullptr || dates.route->src != request.src || dates.route->dst != request.dst) {
    dates.route = &routes.route(request.src, request.dst);
    cover_links(routes);
    dates.latency_s = latency_s(request, *dates.route);
    dates.moving_s = moving_s(request, *dates.route);
  } else if (dates.bytes_bits != bytes_bits || dates.delay_bits != delay_bits) {
    dates.latency_s = latency_s(request, *dates.route);
    dates.moving_s = moving_s(request, *dates.route);
  }
  dates.bytes_bits = bytes_bits;
  dates.delay_bits = delay_bits;
  const double latency = dates.latency_s, moving = dates.moving_s;
  if (scriptable_) {
    released_by_.push_back(releasing_);
    latency_by_flow_.push_back(latency);
    moving_by_flow_.push_back(moving);
  }
  const auto index = static_cast<std::uint32_t>(out.flows.size());
  const double end_s = (start_s + latency) + moving;
  const ScheduledFlow& flow = out.flows.emplace_back(ScheduledFlow{request, dates.route, start_s, end_s});
  if (!take(flow, routes, claims, out))
    return false;
  ends_.push({end_s, index}, latency, moving);
  return true;
}

double IsolatedRunner::latency_s(const FlowRequest& request, const Route& route) {
  return request.delay_s > 0 ? route.latency_s + request.delay_s : route.latency_s;
}

double IsolatedRunner::moving_s(const FlowRequest& request, const Route& route) {
  return static_cast<double>(std::llround(request.bytes)) / route.bound_Bps;
}

void IsolatedRunner::reset() {
  for (const std::uint32_t link : touched_)
    load_[link] = LinkLoad{};
  touched_.clear();
  ends_.clear();
  begins_.clear();
  requests_.clear();
}

bool IsolatedRunner::finish_all(Collective& machine, RouteTable& routes, const LinkClaims& claims,
                                IsolatedRun& out) {
  // Flows finish in order of their end; ties in the order they started. A
  // delayed flow takes its links when its delay is over, before any flow
  // that ends at that instant gives them back (the cautious order).
  while (!ends_.empty()) {
    if (!begins_.empty() && begins_.front().first <= ends_.top().first) {
      std::pop_heap(begins_.begin(), begins_.end(), std::greater<>());
      const auto index = begins_.back().second;
      begins_.pop_back();
      if (!take_links(*out.flows[index].route, routes, claims))
        return false;
      continue;
    }
    const auto [end_s, index] = ends_.pop();
    out.finish_order.push_back(index);
    out.end_s = end_s;
    const ScheduledFlow& flow = out.flows[index];
    const double bound_Bps = flow.route->bound_Bps;
    for (const std::uint32_t link : flow.route->links)
      load_[link].using_Bps -= bound_Bps;
    machine.on_flow_done(flow.request.tag, requests_);
    releasing_ = index;
    for (const auto& request : requests_)
      if (!launch(request, end_s, routes, claims, out))
        return false;
    requests_.clear();
  }
  for (const std::uint32_t link : touched_)
    out.claims.emplace_back(link, load_[link].most_Bps);
  return true;
}

bool IsolatedRunner::run(Collective& machine, double start_s, RouteTable& routes, const LinkClaims& claims,
                         IsolatedRun& out, bool scriptable) {
  out = IsolatedRun{};
  out.end_s = start_s;
  scriptable_ = scriptable;
  released_by_.clear();
  latency_by_flow_.clear();
  moving_by_flow_.clear();
  releasing_ = IsolatedScript::kAtStart;
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
  scriptable_ = false;
  cover_links(routes);
  bool fits = std::all_of(in_flight.begin(), in_flight.end(), [&](const ScheduledFlow& flow) {
    const auto index = static_cast<std::uint32_t>(out.flows.size());
    if (!occupy(flow, routes, claims, out))
      return false;
    ends_.push({flow.end_s, index});
    return true;
  });
  fits = fits && finish_all(machine, routes, claims, out);
  reset();
  return fits;
}

std::optional<IsolatedScript> IsolatedRunner::script(const IsolatedRun& run) const {
  if (!scriptable_ || released_by_.size() != run.flows.size())
    return std::nullopt;
  for (const ScheduledFlow& flow : run.flows)
    if (flow.request.delay_s > 0)
      return std::nullopt;
  return IsolatedScript{run, released_by_, latency_by_flow_, moving_by_flow_};
}

IsolatedRunner::Rerun IsolatedRunner::rerun(const IsolatedScript& script, double start_s,
                                            const LinkClaims& claims, IsolatedRun& out) {
  // The same flows, so the same claims, most at once per link: what run()
  // checks flow by flow, checked on the most (fits is monotone in the
  // bandwidth asked).
  for (const auto& [link, Bps] : script.run.claims)
    if (!claims.fits(link, Bps))
      return Rerun::doesnt_fit;
  out.flows = script.run.flows;
  if (!date_in_order(script, start_s, out))
    return Rerun::other_order;
  out.claims = script.run.claims;
  return Rerun::done;
}

bool IsolatedRunner::date_in_order(const IsolatedScript& script, double start_s, IsolatedRun& out) {
  for (std::size_t f = 0; f < out.flows.size(); ++f) {
    ScheduledFlow& flow = out.flows[f];
    const std::uint32_t by = script.released_by[f];
    flow.start_s = by == IsolatedScript::kAtStart ? start_s : out.flows[by].end_s;
    flow.end_s = (flow.start_s + script.latency_s[f]) + script.moving_s[f];
  }
  // run() pops its flows by (end, index); a flow released at an end ends no
  // earlier and has a later index, so it pops them in that order overall,
  // and in the script's order exactly when the script's order is sorted so.
  const auto& order = script.run.finish_order;
  for (std::size_t k = 1; k < order.size(); ++k) {
    const double before = out.flows[order[k - 1]].end_s, after = out.flows[order[k]].end_s;
    if (after < before || (after == before && order[k] < order[k - 1]))
      return false;
  }
  out.finish_order = order;
  out.end_s = order.empty() ? start_s : out.flows[order.back()].end_s;
  return true;
}

IsolatedRunner::Rerun IsolatedRunner::rerun_moved(const IsolatedScript& script, const Collective& machine,
                                                  double start_s, RouteTable& routes,
                                                  const LinkClaims& claims, IsolatedRun& out) {
  const auto same_bits = [](double a, double b) {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  };
  // Per tag, the new route (looked up at the tag's first flow, as run()'s
  // launch() first asks for it); per script link, its new link, and back.
  std::vector<Route*> moved;
  std::unordered_map<std::uint32_t, std::uint32_t> to, from;
  out.flows = script.run.flows;
  for (ScheduledFlow& flow : out.flows) {
    const auto tag = static_cast<std::size_t>(flow.request.tag);
    if (moved.size() <= tag)
      moved.resize(tag + 1, nullptr);
    if (moved[tag] == nullptr) {
      const auto [src, dst] = machine.endpoints(flow.request.tag);
      Route& route = routes.route(src, dst);
      const Route& was = *flow.route;
      if (!same_bits(route.latency_s, was.latency_s) || !same_bits(route.bound_Bps, was.bound_Bps) ||
          route.links.size() != was.links.size())
        return Rerun::other_links;
      for (std::size_t i = 0; i < route.links.size(); ++i) {
        const std::uint32_t a = was.links[i], b = route.links[i];
        const auto [ab, new_a] = to.emplace(a, b);
        const auto [ba, new_b] = from.emplace(b, a);
        if (ab->second != b || ba->second != a ||
            (new_a && !same_bits(routes.capacity_Bps(a), routes.capacity_Bps(b))))
          return Rerun::other_links;
      }
      moved[tag] = &route;
    }
    flow.request.src = moved[tag]->src;
    flow.request.dst = moved[tag]->dst;
    flow.route = moved[tag];
  }
  // The script's claims, link for link: the same flows' bounds summed in the
  // same order on each image link (rerun()'s check then, on them).
  out.claims.clear();
  out.claims.reserve(script.run.claims.size());
  for (const auto& [link, Bps] : script.run.claims) {
    const std::uint32_t image = to.at(link);
    if (!claims.fits(image, Bps))
      return Rerun::doesnt_fit;
    out.claims.emplace_back(image, Bps);
  }
  return date_in_order(script, start_s, out) ? Rerun::done : Rerun::other_order;
}

}  // namespace trainsim::sim
