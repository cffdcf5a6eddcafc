#pragma once
// Memory per GPU over the iteration, and its peaks. What a task allocates and
// frees comes from a MemoryModel, so the plan-based estimate here
// (analysis/plan_memory.hpp: weights + activations) can be replaced by a full
// memory model without touching the reports.
#include <string>
#include <utility>
#include <vector>

#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// What running a task does to the memory of one GPU.
struct MemoryEffect {
  double alloc_at_start_bytes = 0;
  double free_at_end_bytes = 0;
};

class MemoryModel {
 public:
  virtual ~MemoryModel() = default;
  // Shown in reports: what the model counts.
  virtual std::string description() const = 0;
  // What `gpu` holds for the whole iteration, by component ("weights", ...).
  virtual std::vector<std::pair<std::string, double>> resident_bytes(int gpu) const = 0;
  // What `task` allocates when it starts and frees when it ends on `gpu`.
  virtual MemoryEffect effect(const workloads::Task& task, int gpu) const = 0;
};

struct MemorySample {
  double time_s = 0;
  double bytes = 0;  // held from time_s until the next sample
};

struct GpuMemory {
  int gpu = 0;
  double resident_bytes = 0;
  double peak_bytes = 0;
  double peak_time_s = 0;
  double capacity_bytes = 0;          // HBM of the GPU
  std::vector<MemorySample> samples;  // step function, first at time 0
};

struct MemoryReport {
  std::string model;
  std::vector<std::string> components;  // resident components, in model order
  std::vector<GpuMemory> gpus;
  double peak_bytes = 0;  // the largest GPU peak
  int peak_gpu = -1;
};

MemoryReport memory_over_time(const workloads::TaskGraph& graph, const Timeline& timeline,
                              const MemoryModel& model, const platforms::ClusterSpec& cluster);

}  // namespace trainsim::analysis
