#include "sim/replay/route_table.hpp"

#include <algorithm>

namespace trainsim::sim {

Route& RouteTable::route(int src, int dst) {
  // A source's flows mostly go to one destination at a time (its successor
  // in a ring): its last route is checked before the table.
  const auto s = static_cast<std::size_t>(src);
  if (src >= 0 && s < last_.size() && last_[s] != nullptr && last_[s]->dst == dst)
    return *last_[s];
  Route& r = look_up(src, dst);
  if (src >= 0) {
    if (last_.size() <= s)
      last_.resize(s + 1, nullptr);
    last_[s] = &r;
  }
  return r;
}

Route& RouteTable::look_up(int src, int dst) {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) | static_cast<std::uint32_t>(dst);
  auto [it, inserted] = routes_.try_emplace(key);
  Route& r = it->second;
  if (!inserted)
    return r;
  r.src = src;
  r.dst = dst;
  r.src_host = zone_.endpoint_host(src);
  r.dst_host = zone_.endpoint_host(dst);
  // As ClusterZone::get_local_route gives it to SimGrid: the route's own
  // latency plus what perturbations added to its links.
  double added_s = 0;
  r.bound_Bps = std::numeric_limits<double>::infinity();
  const double route_s = zone_.for_each_link(src, dst, [&](simgrid::s4u::Link* link) {
    r.links.push_back(id_of(link));
    added_s += link->get_latency();
  });
  // A link listed m times (ECMP sub-flows on one plane,
  // platforms/fabrics/ecmp.hpp) gives the flow 1/m of it, as SimGrid's
  // sharing does.
  for (std::size_t i = 0; i < r.links.size(); ++i)
    r.bound_Bps = std::min(r.bound_Bps,
                           links_[r.links[i]]->get_bandwidth() /
                               static_cast<double>(std::count(r.links.begin(), r.links.end(), r.links[i])));
  r.latency_s = route_s + added_s;
  if (zone_.folded())
    zone_.for_each_true_link(src, dst,
                             [&](simgrid::s4u::Link* link) { r.true_links.push_back(id_of(link)); });
  const int gpus = zone_.gpu_count();
  r.recorded_src = src < gpus ? src : dst;
  r.recorded_dst = dst < gpus ? dst : src;
  r.recorded_count = static_cast<std::uint32_t>(recorded_links(r).size());
  return r;
}

std::uint32_t RouteTable::id_of(simgrid::s4u::Link* link) {
  auto [pos, first_use] = link_id_.emplace(link, static_cast<std::uint32_t>(links_.size()));
  if (first_use) {
    links_.push_back(link);
    capacity_Bps_.push_back(link->get_bandwidth());
  }
  return pos->second;
}

}  // namespace trainsim::sim
