#pragma once
// A collective's detailed steps computed alone: each flow takes exactly what
// SimGrid's CM02 model gives a flow that no other flow slows down (its
// route's latency, then its bytes at the route's narrowest link), and the
// collective's state machine releases the next flows as each one finishes,
// as the replay would. Exact as long as nothing else needs its links beyond
// their bandwidth (sim/replay/link_claims.hpp says why), which the replay
// checks when the collective starts and keeps checking while it runs.
#include <cstdint>
#include <vector>

#include "sim/collectives/collectives.hpp"
#include "sim/replay/link_claims.hpp"
#include "sim/replay/route_table.hpp"

namespace trainsim::sim {

struct ScheduledFlow {
  FlowRequest request;
  Route* route = nullptr;
  double start_s = 0;
  double end_s = 0;
};

struct IsolatedRun {
  std::vector<ScheduledFlow> flows;         // in the order they start
  std::vector<std::uint32_t> finish_order;  // indices into flows, in the order they finish
  LinkClaims::Claims claims;                // per link, the most the collective uses at once
  double end_s = 0;                         // when the last flow ends
};

class IsolatedRunner {
 public:
  // Runs `machine` from `start_s` into `out`. Returns false as soon as its
  // own flows would ask a link for more than its bandwidth, or for more than
  // `claims` leaves of it (the machine is then spent).
  bool run(Collective& machine, double start_s, RouteTable& routes, const LinkClaims& claims,
           IsolatedRun& out);

  // The rest of a collective that ran as SimGrid flows until `now`:
  // `machine` is in its state at `now` and `in_flight` are the flows it has
  // in flight, with the end SimGrid gives them on links nothing else needs.
  // They come first in out.flows; `claims` must not count them.
  bool resume(Collective& machine, const std::vector<ScheduledFlow>& in_flight, double now,
              RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);

 private:
  // Adds `flow` to the flows in flight; false if a link cannot take it. A
  // flow with a delay (FlowRequest::delay_s) takes its links when the delay
  // is over.
  bool occupy(const ScheduledFlow& flow, RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);
  // Counts the route's bound on its links; false if one cannot take it.
  bool take_links(const Route& route, RouteTable& routes, const LinkClaims& claims);
  // Lets the flows in flight finish, launching what each end releases.
  bool finish_all(Collective& machine, RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);
  bool launch(const FlowRequest& request, double start_s, RouteTable& routes, const LinkClaims& claims,
              IsolatedRun& out);
  void reset();

  std::vector<double> using_Bps_;  // per link: this collective's flows in flight
  std::vector<double> most_Bps_;   // per link: the most at once
  std::vector<std::uint32_t> touched_;
  std::vector<FlowRequest> requests_;
  std::vector<Route*> route_by_tag_;                    // the route a tag had last (tags mostly keep theirs)
  std::vector<std::pair<double, std::uint32_t>> heap_;  // (end, flow index): the next to finish
  std::vector<std::pair<double, std::uint32_t>> begins_;  // (end of delay, flow index): links to take
};

}  // namespace trainsim::sim
