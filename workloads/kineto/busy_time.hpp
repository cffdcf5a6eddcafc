#pragma once
// Where a traced GPU's time went in each training step: the kernels of the
// step (those launched during its ProfilerStep span) by class, the GPU's
// busy time (the union of its kernels over every stream), each stream's
// busy time, exposed communication and idle time.
//
// Kernels of several streams overlap; the busy time is split between the
// classes without double counting: each instant goes to the first class
// running then, compute roles first (in the table's order), then copies,
// then communication. So the classes' busy times add up to the GPU's busy
// time exactly, and the communication classes' share is the exposed
// communication (communication with no compute and no copy running).
//
//   stream 7   [gemm======][elementwise]      [gemm===]
//   stream 21        [nccl_collective=========]
//   busy       |gemm======|elementwise|nccl|..|gemm===|   idle: the gaps
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::kineto {

struct StepBreakdown {
  int step = -1;                       // index into RankTrace::steps (-1: a mean over steps)
  double step_s = 0;                   // the ProfilerStep span
  double busy_s = 0;                   // union of the step's kernels
  double idle_s = 0;                   // step_s - busy_s, at least 0
  double compute_s = 0;                // union of compute-role kernels
  double communication_s = 0;          // union of communication kernels
  double exposed_communication_s = 0;  // communication with no compute or copy running
  // Per class of the table (same index): kernels, their summed durations,
  // and their share of the busy time.
  std::vector<int> kernels;
  std::vector<double> kernel_s;
  std::vector<double> busy_share_s;
  // Busy time of each (device, stream) the step's kernels ran on.
  std::map<std::pair<int, std::int64_t>, double> stream_busy_s;
};

struct RankBreakdown {
  int rank = 0;
  std::vector<StepBreakdown> steps;  // one per step of the trace, in order
  StepBreakdown mean;                // the mean over steps (counts are means too, rounded)
};

// The breakdown of every step of `trace`, classes from `classes` (the table
// it was read with).
RankBreakdown break_down(const RankTrace& trace, const KernelClassTable& classes);

// Length of the union of [start, end) intervals (any order).
double union_length(std::vector<std::pair<double, double>> intervals);

}  // namespace trainsim::kineto
