#pragma once
// The fold (docs/performance.md, "The fold"): when a rotation of the
// data-parallel replicas is a symmetry of the whole simulated system (the
// cluster, the task graph, the expansion of every collective that spans the
// replicas), only one replica per class of images is replayed; the others
// would do the same things at the same instants on the images of its links.
//
// plan_replica_fold looks for the smallest period q (so the largest fold):
// sigma_q maps replica r to (r + q) mod dp, and its powers form a cyclic
// group of order m = dp / q. Replicas 0 .. q-1 are the representatives.
// Every condition is checked on the scenario as given, none assumed; the
// first one that fails for the rotation by one replica is what the summary
// reports as having stopped a larger fold.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/summary.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

struct ReplicaFold {
  int replicas = 0;  // dp
  int period = 0;    // q: the representatives are replicas 0 .. q-1
  int order = 1;     // m = dp / q: the replicas of one class
  // One step of sigma_q on flow endpoints: GPU ranks, then the NVSwitch
  // endpoints (ClusterZone::switch_endpoint), and whether an endpoint
  // belongs to the representatives.
  std::vector<int> endpoint_image;
  std::vector<char> representative;
  // One step of sigma_q on tasks (a spanning collective is its own image);
  // 32-bit, as the sealed graph's task ids.
  std::vector<std::uint32_t> task_image;
  // Per task: replayed (a representative's task or a spanning collective),
  // and a collective whose group sigma_q maps onto itself.
  std::vector<char> simulated;
  std::vector<char> spanning;
  std::size_t simulated_count = 0;
  // The class fold (sim/replay/class_fold.hpp): its classes are not a
  // rotation's orbits. Each perturbed replica is a class of its own (its
  // tasks are their own images), the other `order` replicas one class whose
  // first is replayed; task_image and endpoint_image are one step of the
  // cycle through them. A collective across replicas is its own image, runs
  // whole (`spanning` is 0 for it) and is listed in `across`, its
  // representation checked when the replay ends.
  bool classes = false;
  std::vector<char> across;
};

struct FoldDecision {
  std::optional<ReplicaFold> fold;
  analysis::FoldSummary summary;
};

// The largest fold of `graph` (built from `scenario`) on `zone`; when there
// is one, folds the zone's routes onto the link orbits' representatives
// (ClusterZone::fold_links). The summary says what was folded and why, and
// what stopped a larger fold (or any).
FoldDecision plan_replica_fold(const workloads::TaskGraph& graph, const scenario::Scenario& scenario,
                               ClusterZone& zone);

// Why the rotation by `period` replicas is not a symmetry of the run (empty
// when it is one, and then `out` holds the fold). Exposed for tests.
std::string rotation_problem(const workloads::TaskGraph& graph, const scenario::Scenario& scenario,
                             const ClusterZone& zone, int period, ReplicaFold& out);

}  // namespace trainsim::sim
