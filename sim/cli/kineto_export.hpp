#pragma once
// `trainsim export SCENARIO --kineto DIR`: one replayed iteration of a
// scenario as the PyTorch profiler traces its GPUs would have written, one
// `<name>.rank<r>.pt.trace.json` per GPU (analysis/kineto/simulated_trace,
// workloads/kineto/trace_writer): kernels of every class with the shapes
// their CPU ops record, NCCL kernels with PyTorch's metadata. What
// `trainsim calibrate` reads back to the profile that produced it.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>

#include "sim/scenario/scenario.hpp"

namespace trainsim::cli {

struct KinetoExport {
  std::size_t files = 0;
  std::size_t kernels = 0;
  double iteration_s = 0;
};

// Simulates `scenario` (one SimGrid run: once per process) and writes every
// GPU's trace into `dir` through `write_file` (atomic, removable).
KinetoExport export_kineto(const scenario::Scenario& scenario, const std::filesystem::path& dir,
                           const std::string& name,
                           const std::function<void(const std::filesystem::path&,
                                                    const std::function<void(std::ostream&)>&)>& write_file);

}  // namespace trainsim::cli
