#pragma once
// The bandwidth every flow in flight may ask of each link, for the automatic
// collective representation (sim/replay/isolated_run.hpp).
//
// Under SimGrid's CM02 model a flow moves at most at its route's narrowest
// link (its bound), and max-min sharing gives every flow its bound as long as
// no link is asked for more than it has. So while, on every link a
// collective uses, the bounds of everything in flight add up to no more than
// the link's bandwidth, the collective's steps take exactly their
// uncontended time and it can be computed alone, without SimGrid flows; the
// flows it would have added leave every other flow's rate unchanged too, as
// the links stay unsaturated either way. A claim is a flow's bound on each
// link of its route (from its start to its end, the latency included), or an
// isolated collective's largest concurrent use of each of its links (from its
// start to its end). When a new flow would push a link over its bandwidth,
// the isolated collectives claiming that link are displaced: the replay turns
// them into SimGrid flows from that instant on.
#include <cstdint>
#include <vector>

#include "sim/replay/route_table.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

// Claims are sums of bandwidths that may equal a link's bandwidth exactly
// (32 NICs under a leaf of 32 NICs' uplink); this relative slack absorbs the
// rounding of the sums, not a real excess. Shared with isolated_run.cpp.
constexpr double kClaimSlack = 1e-9;

class LinkClaims {
 public:
  explicit LinkClaims(const RouteTable& routes) : routes_(routes) {}

  // Whether `link` can take `Bps` more on top of what is claimed now.
  bool fits(std::uint32_t link, double Bps) const {
    return fits_under(link, Bps, routes_.capacity_Bps(link) * (1 + kClaimSlack));
  }
  // The same for a caller that has the link's capacity with the slack,
  // `limit_Bps`, at hand (the isolated runner, per link of every flow).
  bool fits_under(std::uint32_t link, double Bps, double limit_Bps) const {
    const double claimed = link < claimed_Bps_.size() ? claimed_Bps_[link] : 0.0;
    return claimed + Bps <= limit_Bps;
  }

  // A SimGrid flow on `route` starts (its bound on every link); appends to
  // `displaced` the isolated collectives on a link it pushes over capacity.
  void add_flow(const Route& route, std::vector<workloads::TaskId>& displaced);
  void remove_flow(const Route& route);

  // An isolated collective's claims: (link id, bandwidth) pairs.
  using Claims = std::vector<std::pair<std::uint32_t, double>>;
  void add_isolated(workloads::TaskId task, const Claims& claims);
  void remove_isolated(workloads::TaskId task, const Claims& claims);

 private:
  void grow(std::uint32_t link);

  const RouteTable& routes_;
  std::vector<double> claimed_Bps_;
  // Per link, the isolated collectives claiming it.
  std::vector<std::vector<workloads::TaskId>> isolated_;
};

}  // namespace trainsim::sim
