#pragma once
// Counts what a replay will simulate before it runs: tasks, and the flows of
// every collective, expanded exactly as the replay expands them (the
// Collective state machines driven without SimGrid), at the cluster's
// fidelity and at `fast`.
#include "sim/platform/cluster_zone.hpp"
#include "sim/replay/replay_observer.hpp"
#include "sim/replay/replica_fold.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

ReplayCost estimate_replay_cost(const workloads::TaskGraph& graph, const ClusterZone& zone, int iterations);

// The same for a run that folds (`fold`, found for `scenario`'s graph): the
// same counts, each collective of the representatives counted once for
// itself and its m - 1 images (whose expansions the rotation maps onto its
// own), and the memory what the folded run holds, as the size guard counts
// it (scenario::estimate_folded_run_size): one class's records, not every
// expanded one.
ReplayCost estimate_replay_cost(const workloads::TaskGraph& graph, const ClusterZone& zone, int iterations,
                                const ReplicaFold& fold, const scenario::Scenario& scenario);

}  // namespace trainsim::sim
