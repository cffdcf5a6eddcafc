#pragma once
// The headline figures of one simulated iteration, computed from the task
// graph and the timeline alone.
#include <string>
#include <vector>

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
};

struct StageUsage {
  int stage = 0;
  // Means over the stage's GPUs, as fractions of the iteration time.
  double compute_fraction = 0;
  double exposed_comm_fraction = 0;
  double bubble_fraction = 0;  // idle: no compute and no communication
};

struct Summary {
  double iteration_time_s = 0;
  double tokens_per_iteration = 0;
  double tokens_per_s = 0;
  double model_flops = 0;     // per iteration, all GPUs (no recomputation)
  double hardware_flops = 0;  // per iteration, all GPUs (with recomputation)
  double peak_flops = 0;      // sum of the GPUs' bf16 peaks
  double mfu = 0;
  double hfu = 0;
  double tflops_per_gpu = 0;  // mean achieved model TFLOP/s
  double compute_fraction = 0;
  double exposed_comm_fraction = 0;
  double bubble_fraction = 0;  // mean idle fraction over all GPUs
  std::size_t task_count = 0;
  std::size_t record_count = 0;
  std::vector<GpuUsage> gpus;
  std::vector<StageUsage> stages;
};

Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster);

}  // namespace trainsim::analysis
