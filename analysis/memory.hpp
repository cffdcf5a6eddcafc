#pragma once
// Memory per GPU over the iteration and its peaks, for the reports (memory
// chart, trace counters, summary): what the task graph's memory events say.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/memory_curve.hpp"
#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

class GpuClasses;

using MemorySample = MemoryCurvePoint;  // bytes held from time_s until the next sample

struct GpuMemory {
  int gpu = 0;
  double resident_bytes = 0;
  double peak_bytes = 0;
  double peak_time_s = 0;
  double capacity_bytes = 0;  // HBM of the GPU
  // Step function, first at time 0: the memory curve's points, shared by
  // the GPUs of one orbit of a folded run (analysis/memory_curve.hpp).
  std::shared_ptr<const std::vector<MemorySample>> curve;

  const std::vector<MemorySample>& samples() const;
};

struct MemoryReport {
  std::string model;
  std::vector<std::string> components;  // resident components, in model order
  std::vector<GpuMemory> gpus;
  double peak_bytes = 0;  // the largest GPU peak
  int peak_gpu = -1;
};

// The graph's memory events (workloads/memory_model.hpp) at their replayed
// times (analysis/memory_curve.hpp), with each GPU's HBM capacity.
MemoryReport memory_over_time(const workloads::TaskGraph& graph, const Timeline& timeline,
                              const platforms::ClusterSpec& cluster);
// The same, on the GPU orbits already built for this graph and timeline.
MemoryReport memory_over_time(const workloads::TaskGraph& graph, const Timeline& timeline,
                              const platforms::ClusterSpec& cluster, const GpuClasses& classes);
// The same from the curves already computed for this graph and timeline
// (memory_curves(); the report shares their points).
MemoryReport memory_over_time(const MemoryCurves& curves, const platforms::ClusterSpec& cluster);

}  // namespace trainsim::analysis
