#pragma once
// A collective's detailed steps computed alone: each flow takes exactly what
// SimGrid's CM02 model gives a flow that no other flow slows down (its
// route's latency, then its bytes at the route's narrowest link), and the
// collective's state machine releases the next flows as each one finishes,
// as the replay would. Exact as long as nothing else needs its links beyond
// their bandwidth (sim/replay/link_claims.hpp says why), which the replay
// checks when the collective starts and keeps checking while it runs.
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "sim/collectives/collectives.hpp"
#include "sim/replay/flow_end_queue.hpp"
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

// A run's flows as its state machine released them, to be dated again from
// another start (IsolatedRunner::rerun): a collective planned alike (the same
// group, bytes and algorithm: PlanCache's remembered plan) releases the same
// flows in the same order whenever its flows end in the same order, and only
// their dates depend on its start.
struct IsolatedScript {
  static constexpr std::uint32_t kAtStart = std::numeric_limits<std::uint32_t>::max();
  IsolatedRun run;                         // as computed by run()
  std::vector<std::uint32_t> released_by;  // per flow: the flow whose end released it, or kAtStart
  std::vector<double> latency_s;           // per flow: what launch charges before its bytes move
  std::vector<double> moving_s;            // per flow: its bytes at its route's bound
};

class IsolatedRunner {
 public:
  // Runs `machine` from `start_s` into `out`. Returns false as soon as its
  // own flows would ask a link for more than its bandwidth, or for more than
  // `claims` leaves of it (the machine is then spent, `out` unusable). `scriptable` false:
  // script() will not be asked of this run (what it keeps per flow for it
  // is then not kept).
  bool run(Collective& machine, double start_s, RouteTable& routes, const LinkClaims& claims,
           IsolatedRun& out, bool scriptable = true);

  // The rest of a collective that ran as SimGrid flows until `now`:
  // `machine` is in its state at `now` and `in_flight` are the flows it has
  // in flight, with the end SimGrid gives them on links nothing else needs.
  // They come first in out.flows; `claims` must not count them.
  bool resume(Collective& machine, const std::vector<ScheduledFlow>& in_flight, double now,
              RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);

  // The last run(), which fitted and made `run`, as a script; none when a
  // flow of it had a delay (a delayed flow takes its links at a date that
  // the order of the ends does not fix).
  std::optional<IsolatedScript> script(const IsolatedRun& run) const;

  // What run() would make from `start_s` of a fresh machine like the
  // script's, without the machine: every flow dated from its releaser's end
  // (or `start_s`) as launch() dates it. Exact when the flows then end in
  // the script's order (ends, ties by index: the order run() finishes them
  // in, which alone decides what the machine releases and what each link
  // carries at once); `other_order` when they do not, and the caller runs
  // the machine. `doesnt_fit` where run() would return false: a link's most
  // at once does not fit `claims` (the script's run fitted the links'
  // bandwidth, which does not change).
  enum class Rerun { done, doesnt_fit, other_order, other_links };
  static Rerun rerun(const IsolatedScript& script, double start_s, const LinkClaims& claims,
                     IsolatedRun& out);

  // What run() would make from `start_s` of `machine`, fresh and alike to
  // the script's but for its endpoints (Collective::alike_but_endpoints):
  // every flow of the script with its tag's endpoints in `machine` and their
  // route, dated as rerun() dates it. Exact under rerun()'s conditions when,
  // besides, each tag's route has its script route's latency and bound, bit
  // for bit, and the script's links map one to one onto the new routes'
  // links, position for position along each route, onto links of the same
  // capacity: each flow's two date terms are then the script's, and each
  // link carries what its script link carried, the same sums in the same
  // order (docs/performance.md, "Spanning rings dated from an alike ring's
  // script", says why). `other_links` when they do not, and the caller runs
  // the machine. Looks the routes up in the order run() would first ask for
  // them.
  static Rerun rerun_moved(const IsolatedScript& script, const Collective& machine, double start_s,
                           RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);

 private:
  // Adds `flow` to out.flows and takes its links (take()); false if a link
  // cannot take it. The caller queues its end.
  bool occupy(const ScheduledFlow& flow, RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);
  // `flow`, the last of out.flows, takes its links; false if one cannot take
  // it. A flow with a delay (FlowRequest::delay_s) takes them when the delay
  // is over.
  bool take(const ScheduledFlow& flow, RouteTable& routes, const LinkClaims& claims, const IsolatedRun& out);
  // Counts the route's bound on its links; false if one cannot take it.
  bool take_links(const Route& route, RouteTable& routes, const LinkClaims& claims);
  // Lets the flows in flight finish, launching what each end releases.
  bool finish_all(Collective& machine, RouteTable& routes, const LinkClaims& claims, IsolatedRun& out);
  bool launch(const FlowRequest& request, double start_s, RouteTable& routes, const LinkClaims& claims,
              IsolatedRun& out);
  void reset();
  // rerun()'s dates of out.flows (the script's flows) from `start_s`, and
  // its order check: false when they end in another order than the
  // script's.
  static bool date_in_order(const IsolatedScript& script, double start_s, IsolatedRun& out);
  // Sizes the per-link loads to the links the routes have met so far.
  void cover_links(const RouteTable& routes) {
    if (load_.size() < routes.link_count())
      load_.resize(routes.link_count());
  }
  // As SimGrid dates a flow: the latency (and the step's delay, charged as
  // latency) ends, then the bytes move at the bound; launch() and rerun()
  // add the two terms to the start in this order.
  static double latency_s(const FlowRequest& request, const Route& route);
  static double moving_s(const FlowRequest& request, const Route& route);

  struct LinkLoad {
    double using_Bps = 0;  // this collective's flows in flight
    double most_Bps = 0;   // the most at once
  };
  std::vector<LinkLoad> load_;  // per link
  std::vector<std::uint32_t> touched_;
  std::vector<FlowRequest> requests_;
  // Per tag, the route it had last (tags mostly keep theirs) and the two
  // terms of its last flow's date, for the same bytes and delay.
  struct TagDates {
    Route* route = nullptr;
    std::uint64_t bytes_bits = 0;
    std::uint64_t delay_bits = 0;
    double latency_s = 0;
    double moving_s = 0;
  };
  std::vector<TagDates> by_tag_;
  FlowEndQueue ends_;                                     // the flows in flight: the next to finish
  std::vector<std::pair<double, std::uint32_t>> begins_;  // (end of delay, flow index): links to take
  bool scriptable_ = false;
  // The last run(), per flow (script()): the flow whose end released it,
  // and the two terms of its date.
  std::uint32_t releasing_ = IsolatedScript::kAtStart;
  std::vector<std::uint32_t> released_by_;
  std::vector<double> latency_by_flow_;
  std::vector<double> moving_by_flow_;
};

}  // namespace trainsim::sim
