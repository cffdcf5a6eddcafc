#include "analysis/plan_memory.hpp"

#include <algorithm>

#include "workloads/iteration_builder.hpp"

namespace trainsim::analysis {

using workloads::TaskKind;

PlanMemoryModel::PlanMemoryModel(const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                                 int chunks)
    : model_(model), plan_(plan), chunks_(std::max(chunks, 1)) {}

int PlanMemoryModel::chunks_of(const workloads::TaskGraph& graph) {
  int chunks = 1;
  for (workloads::TaskId v = 0; v < graph.size(); ++v)
    chunks = std::max(chunks, graph[v].chunk + 1);
  return chunks;
}

std::string PlanMemoryModel::description() const {
  return "plan estimate: bf16 weights + stored activations (no gradients, optimizer state or workspace)";
}

double PlanMemoryModel::weight_bytes(int stage) const {
  if (model_.layers <= 0 || model_.hidden <= 0 || model_.heads <= 0 || plan_.pp <= 0 || plan_.tp <= 0)
    return 0;  // no model shape (hand-made runs)
  return 2.0 * workloads::stage_parameters_per_gpu(model_, plan_, stage);
}

double PlanMemoryModel::activation_bytes_per_micro_batch(int stage) const {
  (void)stage;  // every stage holds the same number of layers
  const double s = model_.seq_len, b = plan_.micro_batch_size, h = model_.hidden, a = model_.heads,
               t = plan_.tp;
  if (s <= 0 || b <= 0 || h <= 0 || t <= 0 || plan_.pp <= 0)
    return 0;
  double per_layer = 0;
  switch (plan_.recompute) {
    case workloads::Recompute::none:
      per_layer = s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
      break;
    case workloads::Recompute::selective:
      per_layer = s * b * h * (10 + 24 / t);
      break;
    case workloads::Recompute::full:
      per_layer = 2 * s * b * h;
      break;
  }
  return per_layer * model_.layers / (static_cast<double>(plan_.pp) * chunks_);
}

std::vector<std::pair<std::string, double>> PlanMemoryModel::resident_bytes(int gpu) const {
  return {{"weights", weight_bytes(plan_.pp_rank_of(gpu))}};
}

MemoryEffect PlanMemoryModel::effect(const workloads::Task& task, int gpu) const {
  if (task.gpu != gpu)
    return {};
  const double bytes = activation_bytes_per_micro_batch(task.stage);
  switch (task.kind) {
    case TaskKind::forward:
      return {.alloc_at_start_bytes = bytes};
    case TaskKind::backward:
    case TaskKind::backward_weight:
      return {.free_at_end_bytes = bytes};
    default:
      return {};
  }
}

}  // namespace trainsim::analysis
