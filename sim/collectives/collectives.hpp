#pragma once
// Collectives expanded into point-to-point flows, as NCCL runs them. A
// Collective is a small state machine: it says which flows may start, and
// which may start next each time one finishes; the replay turns flows into
// SimGrid communications, so collectives contend with everything else on the
// links they cross.
//
// make_collective() is the one entry point: it resolves the algorithm (the
// task's, else the cluster's collectives.algorithm, `auto` picking as NCCL's
// tuner does), lays the algorithm out on the group's topology (rings per
// rail, trees, per-node phases) and returns the flows for the chosen
// fidelity plus the latency the flows do not carry themselves. See
// docs/collectives.md for the algorithms, their closed forms and the
// calibration of the constants.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/timeline.hpp"
#include "platforms/collective_config.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

class ClusterZone;

// One transfer. Endpoints are GPU ranks, or ClusterZone::switch_endpoint()
// for the NVSwitch of an in-switch reduction. `tag` is private to the
// collective that asked for the flow and is handed back when it finishes.
// `delay_s` is a cost of the step beyond the route's latency (NCCL's
// protocol handshake, collectives.protocol), paid like latency: after the
// flow starts and before its bytes move, without loading any link.
struct FlowRequest {
  int src;
  int dst;
  double bytes;
  int tag;
  double delay_s = 0;
};

// A symmetry of the flows' endpoints (GPU ranks, then switch endpoints): the
// fold's rotation (sim/replay/replica_fold.hpp). image[e] is e's image under
// one step of it, representative[e] whether e is its orbit's representative;
// every orbit has `order` endpoints, exactly one of them a representative.
struct EndpointSymmetry {
  const std::vector<int>* image = nullptr;
  const std::vector<char>* representative = nullptr;
  int order = 1;
};

class Collective {
 public:
  virtual ~Collective() = default;
  // Appends the flows that start with the collective.
  virtual void start(std::vector<FlowRequest>& out) = 0;
  // The flow with this tag finished: appends the flows that may start now.
  virtual void on_flow_done(int tag, std::vector<FlowRequest>& out) = 0;
  virtual bool finished() const = 0;
  // A copy in the same state: the replay tries its remaining steps alone
  // (sim/replay/isolated_run.hpp) on a copy, keeping the original should
  // they not fit.
  virtual std::unique_ptr<Collective> clone() const = 0;
  // This machine, not yet started, in the quotient by `symmetry`: it runs one
  // state per orbit of its steps and hands on only the flows that leave a
  // representative endpoint, each standing for itself and its order - 1
  // images, which end at the same instant and are not handed on (what
  // sim/replay/folded_collective.hpp does with a whole machine, in the same
  // order and with the same tags). Null when the machine has no such form or
  // the symmetry does not map its steps onto themselves; the caller then runs
  // it whole.
  virtual std::unique_ptr<Collective> quotient(const EndpointSymmetry& symmetry) const;
  // How many flows this machine, not yet started, starts when driven to its
  // end (each flow ending once, in any order), where that follows from its
  // shape: the replay's estimate counts every distinct collective's flows
  // before the replay, and driving the machine step by step cost as much as
  // replaying it. Nullopt: unknown without driving a copy (or started).
  virtual std::optional<std::size_t> flow_count() const { return std::nullopt; }
  // Whether this machine and `other`, neither started, release alike but
  // for their endpoints: from their start and for the same ends in the same
  // order, the same requests in the same order with the same tags, bytes and
  // delays, and each tag always with the same endpoints in a machine
  // (endpoints()). The replay then dates one from the other's run
  // (sim/replay/isolated_run.hpp, IsolatedRunner::rerun_moved). False when
  // not known (the default).
  virtual bool alike_but_endpoints(const Collective& other) const;
  // The endpoints of this machine's flows tagged `tag` (a machine that
  // answers alike_but_endpoints()).
  virtual std::pair<int, int> endpoints(int tag) const;
};

struct CollectiveRequest {
  workloads::CollectiveOp op = workloads::CollectiveOp::all_reduce;
  std::vector<int> gpus;  // the group, in its order (broadcast: gpus[0] is the root)
  double bytes = 0;       // nccl-tests' "size" of one collective
  int fold = 1;           // back-to-back identical collectives replayed as one pass
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::automatic;
  // An uneven exchange (all-to-all under imbalanced expert routing, a
  // DeepEP dispatch): the bytes member i sends member j over all folded
  // passes, in group order (workloads::Exchange, TaskGraph::exchanges);
  // null: `bytes` even over the members. Only algorithms with an
  // expand_uneven run it.
  const workloads::Exchange* exchange = nullptr;
};

struct CollectivePlan {
  std::unique_ptr<Collective> flows;
  // Charged after the last flow: NCCL's launch latency, the latency terms a
  // fast expansion stands for, and the extra passes of a folded collective.
  double extra_latency_s = 0;
  analysis::CollectiveChoice choice;
  // Flows of the step-by-step form where counted (ring phases), else 0:
  // what collectives.detailed_flow_limit compares.
  std::int64_t detailed_flows = 0;
};

// The collective for one request on this platform (fidelity from the
// cluster's collectives config, or `fidelity` when given: what a replay at
// the other fidelity would expand). Throws std::invalid_argument for a group
// of fewer than two GPUs or a GPU outside the cluster.
CollectivePlan make_collective(const CollectiveRequest& request, const ClusterZone& zone,
                               std::optional<platforms::Fidelity> fidelity = std::nullopt);

// make_collective(request, zone), and how many flows
// make_collective(request, zone, fast) would start, from one layout,
// algorithm choice and expansion (which do not depend on the fidelity): what
// the replay's estimate counts for every distinct collective. The fast form
// starts one flow per edge of each phase, so its flows are counted from the
// expansion without the fast plan built; nullopt where the fast form is the
// step-by-step one (all-to-all), whose flows are the plan's machine's.
struct PlanAndFastFlows {
  CollectivePlan plan;
  std::optional<std::size_t> fast_flows;
};
PlanAndFastFlows make_collective_counting_fast(const CollectiveRequest& request, const ClusterZone& zone);

// What `auto` (or a request for an algorithm that does not apply) resolves to,
// and the uncontended time estimated for each candidate (NCCL-style tuning on
// the real routes: latency terms + busiest link's load / its bandwidth).
struct AlgorithmEstimate {
  platforms::CollectiveAlgorithm algorithm;
  double time_s;
};
std::vector<AlgorithmEstimate> estimate_algorithms(const CollectiveRequest& request, const ClusterZone& zone);
platforms::CollectiveAlgorithm resolve_algorithm(const CollectiveRequest& request, const ClusterZone& zone);
// The protocol whose step costs the request's ring across nodes pays
// (collectives.protocol; under `auto`, the one NCCL's tuner would pick for
// this size); wire when protocols are off or the algorithm is not such a ring
// (rings inside a node, trees and NVLS keep their wire latencies).
platforms::RingProtocol ring_protocol(const CollectiveRequest& request, const ClusterZone& zone);
// Why the algorithm asked for (the request's, else the cluster's) cannot run
// this request here, so that `auto`'s choice runs instead ("nvls needs NVLink
// SHARP ..."); "" when it can, or when nothing in particular was asked.
std::string algorithm_unavailable_reason(const CollectiveRequest& request, const ClusterZone& zone);

}  // namespace trainsim::sim
