#pragma once
// The nccl-tests of trainsim: one collective at a range of message sizes,
// simulated on a cluster, reported as time, algorithm bandwidth and bus
// bandwidth. All sizes run back to back in one SimGrid simulation (one engine
// per process): each collective starts when the previous one ends, so none
// contends with another, and each is timed from its own start to its end.
#include <string>
#include <vector>

#include "sim/replay/replay_observer.hpp"

#include "platforms/cluster_spec.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

struct CollectiveBenchmarkOptions {
  workloads::CollectiveOp op = workloads::CollectiveOp::all_reduce;
  int ranks = 8;  // GPU ranks 0..ranks-1
  std::vector<double> sizes_bytes;
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::automatic;
  // Told the estimated cost before the run, and its progress.
  ReplayObserver observer;
};

struct CollectiveBenchmarkRow {
  double bytes = 0;
  double time_s = 0;
  double algbw_Bps = 0;  // bytes / time
  double busbw_Bps = 0;  // algbw x the op's bus factor
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::ring;
  int channels = 1;
  // What its ring's steps paid (sim::ring_protocol): wire unless the
  // cluster's collectives.protocol is on and the algorithm is a ring across nodes.
  platforms::RingProtocol protocol = platforms::RingProtocol::wire;
};

// nccl-tests' bus bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for
// reduce-scatter, all-gather and all-to-all, 1 for broadcast and send_recv.
double bus_factor(workloads::CollectiveOp op, int ranks);

// min, min*factor, ... up to max (inclusive), as nccl-tests -b -e -f.
std::vector<double> size_range(double min_bytes, double max_bytes, double factor);

struct CollectiveBenchmark {
  std::vector<CollectiveBenchmarkRow> rows;  // one per size
  // Why the algorithm asked for could not run here, so that `auto`'s choice
  // ran instead (sim::algorithm_unavailable_reason); "" when it ran.
  std::string algorithm_unavailable;
};

// Simulates every size (one call per process).
CollectiveBenchmark run_collective_benchmark(const platforms::ClusterSpec& cluster,
                                             const CollectiveBenchmarkOptions& options);

}  // namespace trainsim::sim
