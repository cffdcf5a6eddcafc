#pragma once
// Replays a task graph on the SimGrid platform: every compute task is a
// SimGrid execution on its GPU's host, every transfer a SimGrid communication
// over the routed links, collectives expanded into flows. An activity is
// started only when all its predecessors are done (SimGrid keeps
// declared-but-unstarted activities in a list with linear removal), a
// finished one is started again rather than a new one created (see
// replay.cpp), and each GPU's compute stream runs one task at a time, in the
// order tasks became ready.
#include <functional>
#include <vector>

#include "analysis/timeline.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/replay/replay_observer.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

// Runs the simulation to the end and returns what happened. One replay per
// process (SimGrid keeps one engine per process).
analysis::Timeline replay(const workloads::TaskGraph& graph, const ClusterZone& zone);

class PerturbationDriver;
struct ReplicaFold;

struct ReplayOptions {
  // Consecutive iterations of the graph, each starting when the previous one
  // has finished on every GPU (Megatron's loss and gradient-norm reductions
  // synchronise all ranks once per iteration).
  int iterations = 1;
  // Applies the scenario's perturbations (sim/perturbations/driver.hpp).
  PerturbationDriver* perturbations = nullptr;
  // Flows the first iteration will record (ReplayCost::recorded_flows), when
  // known: their records are allocated once instead of grown by doubling,
  // which at 65,536 GPUs (98M flows, 4.7 GB of records) held the old and the
  // new buffer at once (up to 3x the records at the peak).
  std::size_t expected_flows = 0;
  // The fold (sim/replay/replica_fold.hpp): replay only its representatives'
  // tasks and the collectives spanning its replicas, on a zone whose links
  // it folded, then expand the first iteration's records to every GPU.
  const ReplicaFold* fold = nullptr;
  // Only checks the class fold's run-time premise (FoldRefuted): the
  // records are not expanded (sim/replay/simulation.cpp's child replay).
  bool check_fold_only = false;
  // Called every few hundred finished tasks (the CLI's progress line).
  std::function<void(const ReplayProgress&)> on_progress;
};

struct ReplayResult {
  // The first iteration's records (what every report describes).
  analysis::Timeline timeline;
  // Start and end of every iteration, simulated seconds since the start.
  std::vector<double> iteration_start_s;
  std::vector<double> iteration_end_s;
};
ReplayResult replay(const workloads::TaskGraph& graph, const ClusterZone& zone, const ReplayOptions& options);

}  // namespace trainsim::sim
