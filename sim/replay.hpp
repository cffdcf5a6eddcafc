#pragma once
// Replays a task graph on the SimGrid platform: every compute task is a
// SimGrid execution on its GPU's host, every transfer a SimGrid communication
// over the routed links, collectives expanded into flows. An activity is
// created and started only when all its predecessors are done (SimGrid keeps
// declared-but-unstarted activities in a list with linear removal), and each
// GPU's compute stream runs one task at a time, in the order tasks became
// ready.
#include "analysis/timeline.hpp"
#include "sim/cluster_zone.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

// Runs the simulation to the end and returns what happened. One replay per
// process (SimGrid keeps one engine per process).
analysis::Timeline replay(const workloads::TaskGraph& graph, const ClusterZone& zone);

}  // namespace trainsim::sim
