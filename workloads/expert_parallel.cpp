#include "workloads/expert_parallel.hpp"

namespace trainsim::workloads {

double layer_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  const double experts = model.expert_parameters(layer);
  return (model.layer_parameters(layer) - experts) / plan.tp + experts / (double(plan.tp) * plan.ep);
}

double layer_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  return model.expert_parameters(layer) / (double(plan.tp) * plan.ep);
}

double ep_all_to_all_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = double(plan.micro_batch_size) * model.seq_len / plan.cp /
                        (plan.sequence_parallel && plan.tp > 1 ? plan.tp : 1);
  return 2.0 * tokens * model.moe.top_k * model.hidden * model.moe.capacity_factor;
}

int ep_all_to_alls(const ParallelPlan& plan, PipeOpKind kind, int moe_layers) {
  switch (kind) {
    case PipeOpKind::forward:
      return 2 * moe_layers;
    case PipeOpKind::backward:
    case PipeOpKind::backward_input:
      return (plan.recompute == Recompute::full ? 4 : 2) * moe_layers;
    case PipeOpKind::backward_weight:
      return 0;
  }
  return 0;
}

}  // namespace trainsim::workloads
