#include "workloads/activation_memory.hpp"

namespace trainsim::workloads {

double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const double s = model.seq_len, b = plan.micro_batch_size, h = model.hidden, a = model.heads, t = plan.tp;
  const double sbh = s * b * h;
  switch (plan.recompute) {
    case Recompute::none:
      return sbh * (10 + 24 / t + 5 * a * s / (h * t));
    case Recompute::selective:
      return sbh * (10 + 24 / t);
    case Recompute::full:
      return 2 * sbh;
  }
  return 0;
}

double stage_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, int layers) {
  return layers * layer_activation_bytes(model, plan);
}

}  // namespace trainsim::workloads
