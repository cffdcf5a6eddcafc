#pragma once
// What the replay needs to know about the route between two flow endpoints,
// looked up once per (source, destination) pair: the link directions it
// crosses (as dense ids, for the link claims of the automatic collective
// representation), its latency and its narrowest link (together, how long an
// uncontended flow takes under SimGrid's CM02 model: latency, then bytes at
// the narrowest link's bandwidth), where the timeline keeps its copy of the
// route (FlowRecorder), and the pair's finished communications waiting to be
// started again (replay.cpp says why). One hash lookup per flow serves all of
// it, none when the flow's source asked for the same pair last.
#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {

struct Route {
  static constexpr std::uint32_t kUnrecorded = std::numeric_limits<std::uint32_t>::max();

  int src = -1;  // endpoints
  int dst = -1;
  simgrid::s4u::Host* src_host = nullptr;
  simgrid::s4u::Host* dst_host = nullptr;
  std::vector<std::uint32_t> links;  // RouteTable link ids, in route order
  // Under the fold (ClusterZone::fold_links), `links` are the link orbits'
  // representatives, as SimGrid shares them; these are the route's own
  // links, as the timeline records them. Empty when not folded.
  std::vector<std::uint32_t> true_links;
  double latency_s = 0;  // what SimGrid charges before the first byte moves
  double bound_Bps = 0;  // the narrowest link: an uncontended flow's rate
  // The timeline's copy: flow_links[timeline_first, + links.size()).
  std::uint32_t timeline_first = kUnrecorded;
  // What the timeline records of a flow on it, made once (scale-16k records
  // 3M flows): its endpoints (a leg to or from an NVSwitch on its GPU) and
  // how many links (recorded_links()).
  int recorded_src = -1;
  int recorded_dst = -1;
  std::uint32_t recorded_count = 0;
  std::vector<simgrid::s4u::ActivityPtr> idle;  // finished communications of this pair
  // SimGrid's copy of the route as the zone remembers it
  // (ClusterZone::expect_route): starting a communication skips the zone's
  // lookup.
  ClusterZone::RouteMemo kernel;
};

class RouteTable {
 public:
  explicit RouteTable(const ClusterZone& zone) : zone_(zone) {}

  // The route between two endpoints (GPU ranks or NVSwitch endpoints); the
  // reference stays valid for the table's life.
  Route& route(int src, int dst);

  std::size_t link_count() const { return links_.size(); }
  simgrid::s4u::Link* link(std::uint32_t id) const { return links_[id]; }
  // The link's bandwidth when first seen (the automatic representation runs
  // only on platforms whose links keep theirs: no link perturbations).
  double capacity_Bps(std::uint32_t id) const { return capacity_Bps_[id]; }
  // The links the timeline records for a route (its own, under the fold).
  static const std::vector<std::uint32_t>& recorded_links(const Route& route) {
    return route.true_links.empty() ? route.links : route.true_links;
  }

 private:
  std::uint32_t id_of(simgrid::s4u::Link* link);
  Route& look_up(int src, int dst);

 private:
  const ClusterZone& zone_;
  std::unordered_map<std::uint64_t, Route> routes_;  // nodes: stable addresses
  std::vector<Route*> last_;                         // by source endpoint: the route it asked for last
  std::unordered_map<const simgrid::s4u::Link*, std::uint32_t> link_id_;
  std::vector<simgrid::s4u::Link*> links_;
  std::vector<double> capacity_Bps_;
};

}  // namespace trainsim::sim
