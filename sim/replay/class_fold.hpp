#pragma once
// The class fold (docs/performance.md, "The fold", "Perturbed replicas as
// classes of their own"): a run whose perturbations tell some data-parallel
// replicas apart (a slowed or throttled GPU) has no rotation of the replicas
// as a symmetry, so the rotation fold (replica_fold.hpp) folds nothing. Its
// replicas may still fall into classes that behave alike: each perturbed
// replica a class of its own, every other replica an image of one
// representative, when the replicas interact only through collectives whose
// outcome every member sees alike. Premises, each checked on the scenario:
//
//  P1. Every task across replicas is a collective the automatic fidelity
//      runs `isolated` from its start to its end (a closed form that starts
//      when its last member arrives and ends at one instant for all): the
//      fidelity is `auto`, no link fault changes links, and the replay
//      checks when it ends that each one ran so (FoldRefuted otherwise).
//  P2. Every link that flows of two replicas can cross cannot bind the
//      max-min sharing: the capacities of the first links (or of the last
//      links) of the routes that can cross it add up to no more than its
//      own. The automatic fidelity's claims, which add bounds rather than
//      rates, are kept whole in the quotient by claiming each replayed
//      flow's images too (class_ghosts.hpp).
//  P3. Each unperturbed replica is the image of the representative under a
//      relabelling of GPUs (same node group, speed, resident memory) that
//      maps tasks (every attribute, memory events, dependencies) onto tasks
//      and the routes their flows can take onto routes of the same links'
//      bandwidths and latencies, the links no other replica crosses onto
//      such links one to one.
#include <stdexcept>
#include <string>

#include "sim/platform/cluster_zone.hpp"
#include "sim/replay/replica_fold.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

// A premise of the class fold that only the replay can check failed (a
// collective across replicas did not run `isolated` throughout): the folded
// replay is not the full one's. simulate() replays the run whole then.
struct FoldRefuted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Why the class fold does not hold for `graph` (built from `scenario`) on
// `zone`: a sentence naming the premise, empty when it holds; `out` then
// holds the fold and `why` the summary's words on it.
std::string class_fold_problem(const workloads::TaskGraph& graph, const scenario::Scenario& scenario,
                               const ClusterZone& zone, ReplicaFold& out, std::string& why);

}  // namespace trainsim::sim
