#pragma once
// Counts what a replay will simulate before it runs: tasks, and the flows of
// every collective, expanded exactly as the replay expands them (the
// Collective state machines driven without SimGrid), at the cluster's
// fidelity and at `fast`.
#include "sim/platform/cluster_zone.hpp"
#include "sim/replay/replay_observer.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

ReplayCost estimate_replay_cost(const workloads::TaskGraph& graph, const ClusterZone& zone, int iterations);

}  // namespace trainsim::sim
