#pragma once
// Memory per GPU over the simulated iteration: the task graph's memory
// events (workloads/memory_model.hpp) placed at the times the replay ran
// their tasks. Pure: (TaskGraph, Timeline) in, step functions out.
//
// A folded run (analysis/fold_classes.hpp) computes the curve once per GPU
// orbit, on its representative, when every image GPU's events are its
// representative's under the rotation, in the same order, with the same
// resident memory (checked; otherwise every GPU on its own): an image task
// runs at its representative task's times, so the image GPU's curve is the
// same step function, bit for bit. The GPUs of one orbit then share one
// curve (the same points, held once).
#include <memory>
#include <vector>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

class GpuClasses;

struct MemoryCurvePoint {
  double time_s = 0;
  double bytes = 0;  // held from time_s until the next point
};

struct GpuMemoryCurve {
  int gpu = 0;
  workloads::MemoryBreakdown resident;  // weights, gradients, optimizer state
  // Step function, first at time 0 (the resident bytes); shared by the GPUs
  // of one orbit of a folded run.
  std::shared_ptr<const std::vector<MemoryCurvePoint>> curve;
  double peak_bytes = 0;
  double peak_time_s = 0;              // first time the peak is reached
  workloads::MemoryBreakdown at_peak;  // by kind, at peak_time_s

  const std::vector<MemoryCurvePoint>& points() const;
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
// The same, on the GPU orbits already built for this graph and timeline
// (GpuClasses::of(graph, timeline, graph.gpu_count)).
MemoryCurves memory_curves(const workloads::TaskGraph& graph, const Timeline& timeline,
                           const GpuClasses& classes);

}  // namespace trainsim::analysis
