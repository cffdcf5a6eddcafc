#pragma once
// Memory per GPU over the simulated iteration: the task graph's memory
// events (workloads/memory_model.hpp) placed at the times the replay ran
// their tasks. Pure: (TaskGraph, Timeline) in, step functions out.
#include <vector>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

struct MemoryCurvePoint {
  double time_s = 0;
  double bytes = 0;  // held from time_s until the next point
};

struct GpuMemoryCurve {
  int gpu = 0;
  workloads::MemoryBreakdown resident;   // weights, gradients, optimizer state
  std::vector<MemoryCurvePoint> points;  // step function, first at time 0 (the resident bytes)
  double peak_bytes = 0;
  double peak_time_s = 0;              // first time the peak is reached
  workloads::MemoryBreakdown at_peak;  // by kind, at peak_time_s
};

struct MemoryCurves {
  std::vector<GpuMemoryCurve> gpus;  // indexed by GPU rank
  double peak_bytes = 0;             // the largest GPU peak
  int peak_gpu = -1;                 // the first GPU that reaches it
};

// Events at the same instant apply frees first (a caching allocator reuses
// memory released just before), so a task that frees as the next one
// allocates does not count both.
MemoryCurves memory_curves(const workloads::TaskGraph& graph, const Timeline& timeline);

}  // namespace trainsim::analysis
