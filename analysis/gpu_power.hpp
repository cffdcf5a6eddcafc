#pragma once
// GPU power by what each GPU does, integrated over the replayed iteration:
// while a compute task runs the GPU draws the power of its kernels (the
// board limit for tensor-core-bound kernels, less for HBM-bound ones:
// GpuSpec::compute_power_W of the task's memory_bound_fraction), while only
// NCCL kernels run its communication power, and otherwise its idle power (a
// GPU the job holds in P0). NCCL's kernels run while the GPU transfers (a
// collective it takes part in, a send or receive) and while it waits in one
// for its peers: a span with nothing running that ends when a communication
// the GPU takes part in starts (Megatron blocks in its pipeline receive,
// which NCCL's kernel polls; a rank that reaches a collective first spins in
// it until the others arrive). Compute overlapped with communication draws
// the compute power: the board is at its limit either way. Values per GPU:
// platforms/gpu_catalogue.
#include <vector>

#include "analysis/fold_classes.hpp"
#include "analysis/intervals.hpp"
#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

struct GpuActivity {
  double compute_s = 0;        // a compute task runs (communication or not)
  double communication_s = 0;  // only NCCL kernels run, moving data
  double waiting_s = 0;        // only NCCL kernels run, waiting for peers
  double idle_s = 0;           // nothing runs
  double energy_J = 0;
};

// Per GPU rank, over [0, timeline.end_s] (the first iteration's records).
std::vector<GpuActivity> gpu_activity(const workloads::TaskGraph& graph, const Timeline& timeline,
                                      const platforms::ClusterSpec& cluster);
// The same, on GPU orbits already built for this graph and timeline (built
// again if they are not of the cluster's GPU count). `nccl_waits`, when not
// null, gets nccl_wait_spans(graph, timeline, classes) below, read from the
// same walk over each GPU's spans (walked again only when some compute task
// draws no power, which the walk counts as not computing); it is left empty
// when the classes are not of the cluster's GPU count.
std::vector<GpuActivity> gpu_activity(const workloads::TaskGraph& graph, const Timeline& timeline,
                                      const platforms::ClusterSpec& cluster, const GpuClasses& classes,
                                      std::vector<std::vector<Interval>>* nccl_waits = nullptr);

// Per GPU rank, the spans GpuActivity::waiting_s counts, in time order.
std::vector<std::vector<Interval>> nccl_wait_spans(const workloads::TaskGraph& graph,
                                                   const Timeline& timeline);
// The same for the representatives of `classes` only (an image GPU's list
// is its representative's; analysis/fold_classes.hpp), the others empty.
std::vector<std::vector<Interval>> nccl_wait_spans(const workloads::TaskGraph& graph,
                                                   const Timeline& timeline, const GpuClasses& classes);

}  // namespace trainsim::analysis
