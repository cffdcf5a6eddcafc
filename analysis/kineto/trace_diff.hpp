#pragma once
// A measured job beside its simulation, rank by rank: `trainsim diff`. Both
// sides are PyTorch-profiler traces (the simulated one written from the
// replay, analysis/kineto/simulated_trace), broken down by the same code
// (workloads/kineto/busy_time), so a difference is the model's, not the
// bookkeeping's:
//
//   step time                    the ProfilerStep span (measured: the mean over steps)
//   busy, idle                   union of the GPU's kernels, and the rest of the step
//   compute / communication      union of compute-role / communication kernels
//   exposed communication        communication with no compute or copy running
//   streams                      busy time of the compute and the communication streams
//   class.<name>                 each kernel class's summed kernel time
//   critical path                the GPU-side critical path of the steps, per step, by
//                                what it runs: from the last kernel of the last step
//                                back to the first kernel of the first, each kernel's
//                                predecessor the one that ended last before it started
//                                on any stream of the GPU; a stretch where none ran is
//                                idle (the GPU waited for the host or a peer), and so is
//                                the end of the last step after its last kernel. It
//                                spans the steps on the GPU (over the whole run, since a
//                                GPU that lags its host runs one step's kernels into the
//                                next step's span), divided by the number of steps
//   flops                        GEMM and attention FLOPs per step, from the shapes
//                                (a check that the scenario describes the traced model)
//
// Each metric per rank and for all ranks (the mean over the ranks).
#include <string>
#include <vector>

#include "workloads/kineto/busy_time.hpp"
#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::analysis {

// The GPU-side critical path of a trace's steps (above) by role of what
// runs on it, per step; the parts add up to the steps' span on the GPU over
// their number.
struct CriticalPathSplit {
  double compute_s = 0;
  double communication_s = 0;
  double copy_s = 0;
  double idle_s = 0;
};
CriticalPathSplit gpu_critical_path(const kineto::RankTrace& trace, const kineto::KernelClassTable& classes);

struct DiffRow {
  std::string metric;  // "step_time_s", "class.gemm_s", "critical_path.idle_s", ...
  int rank = -1;       // -1: all ranks (their mean)
  double measured = 0;
  double simulated = 0;
  // simulated / measured - 1 (0 when both are 0; when only measured is 0, +inf).
  double relative() const;
};

struct TraceDiff {
  std::vector<int> ranks;
  std::vector<DiffRow> rows;  // by metric, then rank (all ranks first)
  // What the comparison found worth saying ("the scenario's GEMM FLOPs per
  // step differ from the trace's by +43%: ...").
  std::vector<std::string> notes;
  const DiffRow* find(const std::string& metric, int rank = -1) const;
};

// `measured[i]` and `simulated[i]` are the same rank.
TraceDiff diff_traces(const std::vector<kineto::RankTrace>& measured,
                      const std::vector<kineto::RankTrace>& simulated,
                      const kineto::KernelClassTable& classes);

}  // namespace trainsim::analysis
