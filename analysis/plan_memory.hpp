#pragma once
// The memory estimate the plan alone gives, until the full memory model
// lands: bf16 weights resident all iteration, and each micro-batch's stored
// activations from the start of its forward to the end of its backward
// (Korthikanti et al., MLSys 2023, tensor parallelism without sequence
// parallelism, 16-bit activations, 1-byte dropout masks):
//   per layer  s b h (10 + 24/t + 5 a s / (h t))   no recomputation
//              s b h (10 + 24/t)                   selective recomputation
//              2 s b h                             full recomputation
// Gradients, optimizer state, workspace and fragmentation are not counted.
#include "analysis/memory.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::analysis {

class PlanMemoryModel final : public MemoryModel {
 public:
  // `chunks`: model chunks per GPU (interleaved / V schedules), each forward
  // then stores the activations of layers / (pp x chunks) layers.
  PlanMemoryModel(const workloads::ModelSpec& model, const workloads::ParallelPlan& plan, int chunks = 1);
  // The chunk count a task graph uses (1 + the largest Task::chunk).
  static int chunks_of(const workloads::TaskGraph& graph);

  std::string description() const override;
  std::vector<std::pair<std::string, double>> resident_bytes(int gpu) const override;
  MemoryEffect effect(const workloads::Task& task, int gpu) const override;

  // Stored activations of one micro-batch (one chunk) on one GPU of `stage`.
  double activation_bytes_per_micro_batch(int stage) const;
  double weight_bytes(int stage) const;

 private:
  workloads::ModelSpec model_;
  workloads::ParallelPlan plan_;
  int chunks_ = 1;
};

}  // namespace trainsim::analysis
