#pragma once
// trainsim's replayed iteration as the PyTorch profiler traces its GPUs would
// have written: one RankTrace per GPU, one ProfilerStep spanning the
// iteration, every compute task's kernels (workloads/kineto/task_kernels)
// laid into the task's replayed interval, every collective and send as an
// NCCL kernel with PyTorch's NCCL metadata. `trainsim export --kineto`
// writes them (workloads/kineto/trace_writer), `trainsim diff` breaks them
// down beside the measured ones, and `trainsim calibrate` reads them back:
// fitted, they give back the efficiency profile that produced them.
//
// Within a compute task each pass of the cost model (one layer's forward,
// ...) gets its share of the task's interval (its time over the task's
// summed pass times, exactly 1 at nominal speed):
//   device-bound pass   kernels back to back from the pass's start
//   host-bound pass     kernel i launched host_overhead x i after the pass's
//                       start, started at its launch or when the one before
//                       it ends (kernels spread evenly, with equal gaps, when
//                       that would overrun the pass)
// The host launches of a pass are host_overhead apart: the pace a
// host-bound step runs at, which calibrate measures back.
#include <string>
#include <vector>

#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"
#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"
#include "workloads/kineto/task_kernels.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

struct SimulatedTraceOptions {
  // Names the files in RankTrace::path ("<name>.rank<r>.pt.trace.json").
  std::string name = "trainsim";
  // The GPUs to write (empty: every GPU of the graph).
  std::vector<int> gpus;
  // Compute tasks as their kernels (nullptr: one kernel per task, class
  // `other`; a trace workload, or a cost model that is not per op).
  const kineto::TaskKernels* kernels = nullptr;
};

// Stream ids of the exported traces: compute on stream 7 (as PyTorch's
// default stream appears), each communication stream its own.
std::int64_t kineto_stream_of(Stream stream);

std::vector<kineto::RankTrace> simulated_traces(const workloads::TaskGraph& graph, const Timeline& timeline,
                                                const platforms::ClusterSpec& cluster,
                                                const kineto::KernelClassTable& classes,
                                                const SimulatedTraceOptions& options);

}  // namespace trainsim::analysis
