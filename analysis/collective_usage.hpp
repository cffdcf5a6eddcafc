#pragma once
// Which collective algorithms the replay used: one row per (parallelism,
// operation, algorithm), from the choices the replay recorded, for
// summary.json. `auto` resolves per collective size and group, so one kind of
// collective can appear under several algorithms.
#include <array>
#include <string>
#include <vector>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

struct CollectiveUse {
  workloads::CommKind comm = workloads::CommKind::none;
  workloads::CollectiveOp op = workloads::CollectiveOp::all_reduce;
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::ring;
  platforms::Fidelity fidelity = platforms::Fidelity::detailed;
  int channels = 1;   // the most any of them used
  int count = 0;      // collective tasks (a folded task counts `fold` times)
  double bytes = 0;   // summed over those collectives, per rank
  double busy_s = 0;  // summed durations (on one member GPU each)
  // How many of them (counted as `count`) each representation ran: all
  // `flows` unless the fidelity is auto (analysis::Representation).
  std::array<int, kRepresentationCount> by_representation{};
};

// What the automatic fidelity did over the whole iteration, summed from the
// rows: collectives (counted as CollectiveUse::count) per representation.
struct RepresentationTotals {
  std::array<int, kRepresentationCount> count{};
  bool automatic = false;  // some collective ran under the auto fidelity
};
RepresentationTotals representation_totals(const std::vector<CollectiveUse>& uses);

// Ordered by parallelism, then operation, then algorithm.
std::vector<CollectiveUse> collective_usage(const workloads::TaskGraph& graph, const Timeline& timeline);

}  // namespace trainsim::analysis
