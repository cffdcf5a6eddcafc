#pragma once
// The headline figures of one simulated iteration, computed from the task
// graph and the timeline alone.
#include <string>
#include <vector>

#include "analysis/fold_classes.hpp"
#include "analysis/memory_curve.hpp"
#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// Where one GPU's iteration went. compute + exposed communication + idle =
// the iteration time.
struct GpuUsage {
  int gpu = 0;
  int node = 0;
  int stage = 0;
  std::string gpu_type;
  double compute_s = 0;        // compute stream busy
  double communication_s = 0;  // any communication stream busy (sends count for sender and receiver)
  double overlap_s = 0;        // communication hidden under compute
  double exposed_comm_s = 0;   // communication while no compute runs
  double idle_s = 0;           // neither compute nor communication: the bubble
  double model_flops = 0;
  double hardware_flops = 0;
  double achieved_tflops = 0;           // model FLOPs / iteration time, in TFLOP/s
  double achieved_hardware_tflops = 0;  // hardware FLOPs / iteration time, in TFLOP/s
  // Memory (analysis/memory_curve.hpp): the highest the GPU's memory gets,
  // when it first gets there, what it holds then, and the GPU's HBM.
  double peak_memory_bytes = 0;
  double peak_memory_time_s = 0;
  workloads::MemoryBreakdown memory_at_peak;
  double memory_capacity_bytes = 0;
};

struct StageUsage {
  int stage = 0;
  // Means over the stage's GPUs, as fractions of the iteration time.
  double compute_fraction = 0;
  double exposed_comm_fraction = 0;
  double bubble_fraction = 0;  // idle: no compute and no communication
};

// The fold (docs/performance.md, "The fold"): whether the replay simulated
// one data-parallel replica per class of identical ones, why, and what
// stopped a larger fold (or any). Not considered: summary.json leaves it out.
struct FoldSummary {
  bool considered = false;
  bool folded = false;
  int replicas = 0;    // data-parallel replicas of the plan
  int simulated = 0;   // replicas replayed (one per class)
  int class_size = 1;  // replicas per class
  std::string folded_why;
  std::string stopped;
};

struct Summary {
  double iteration_time_s = 0;
  double tokens_per_iteration = 0;
  double tokens_per_s = 0;
  double model_flops = 0;     // per iteration, all GPUs (no recomputation)
  double hardware_flops = 0;  // per iteration, all GPUs (with recomputation)
  double peak_flops = 0;      // sum of the GPUs' bf16 peaks
  double peak_fp8_flops = 0;  // sum of their fp8 peaks
  // Model FLOPs (the compute tasks' sum: matmuls of the layers and the
  // output layer, full causal attention) against the bf16 peaks (NVIDIA's
  // "BF16 MFU").
  double mfu = 0;
  double hfu = 0;
  // Against the fp8 peaks (the "FP8 MFU" of NVIDIA's DGX Cloud tables); 0
  // when the plan trains in BF16 (summary.json leaves it out).
  double mfu_fp8_peak = 0;
  // The same time and bf16 peaks under the definitions publications use
  // (analysis/mfu_definitions.hpp): 0 without a model shape (a Chakra
  // trace; summary.json leaves them out).
  double mfu_6n = 0;
  double mfu_palm = 0;
  double mfu_nvidia = 0;
  double tflops_per_gpu = 0;  // mean achieved model TFLOP/s
  double compute_fraction = 0;
  double exposed_comm_fraction = 0;
  double bubble_fraction = 0;    // mean idle fraction over all GPUs
  double peak_memory_bytes = 0;  // the largest GPU peak
  int peak_memory_gpu = -1;
  bool fits_in_memory = true;  // no GPU's peak exceeds its HBM
  std::size_t task_count = 0;
  std::size_t record_count = 0;
  std::vector<GpuUsage> gpus;
  std::vector<StageUsage> stages;
  FoldSummary fold;
};

Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster);
// The same, on the GPU orbits already built for this graph and timeline
// (GpuClasses::of(graph, timeline, graph.gpu_count); analysis/fold_classes.hpp).
Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster, const GpuClasses& classes);
// The same, with the memory curves already computed for them
// (memory_curves(graph, timeline, classes)).
Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster, const GpuClasses& classes,
                  const MemoryCurves& memory);

}  // namespace trainsim::analysis
