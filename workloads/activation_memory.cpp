#include "workloads/activation_memory.hpp"

namespace trainsim::workloads {
namespace {

struct Shape {
  double sbh = 0;    // tokens of one micro-batch on this GPU (s / cp) x b x h
  double s = 0;      // the whole sequence (attention scores span it)
  double h = 0;      // hidden
  double a = 0;      // heads
  double t = 1;      // TP degree
  double split = 0;  // per token, in units of h: the tensors TP splits (24 for GPT)
  double v = 0;      // vocabulary
  bool sp = false;
  bool flash = false;
};

Shape shape_of(const ModelSpec& model, const ParallelPlan& plan) {
  Shape x;
  x.s = model.seq_len;
  x.h = model.hidden;
  x.a = model.heads;
  x.t = plan.tp;
  x.v = model.vocab;
  x.sp = plan.sequence_parallel && plan.tp > 1;
  x.flash = model.flash_attention;
  const double local_tokens = static_cast<double>(model.seq_len) / plan.cp * plan.micro_batch_size;
  x.sbh = local_tokens * model.hidden;
  const double kv = model.heads > 0 ? static_cast<double>(model.kv_heads) / model.heads : 1.0;
  const double f = model.hidden > 0 ? static_cast<double>(model.ffn_hidden) / model.hidden : 4.0;
  // Q and the attention output (2 + 2), K and V (4 kv), the MLP
  // intermediates (4 f GeLU, 6 f SwiGLU).
  x.split = 4 + 4 * kv + (model.swiglu ? 6 : 4) * f;
  return x;
}

// Softmax output, dropout mask and dropout output of the scores: 5 a s^2 b,
// i.e. s b h x 5 a s / h, split by TP over heads.
double scores(const Shape& x) {
  return x.flash ? 0.0 : x.sbh * 5 * x.a * x.s / (x.h * x.t);
}

}  // namespace

double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, Recompute recompute) {
  const Shape x = shape_of(model, plan);
  if (x.h <= 0 || x.t <= 0)
    return 0;
  const double kept = x.sp ? (10 + x.split) / x.t : 10 + x.split / x.t;
  switch (recompute) {
    case Recompute::none:
      return x.sbh * kept + scores(x);
    case Recompute::selective:
      return x.sbh * kept;
    case Recompute::full:
      return 2 * x.sbh / (x.sp ? x.t : 1.0);
  }
  return 0;
}

double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return layer_activation_bytes(model, plan, plan.recompute);
}

double stage_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, int layers) {
  return layers * layer_activation_bytes(model, plan);
}

double embedding_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  return x.sbh / (x.sp ? x.t : 1.0);
}

double logits_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  if (x.h <= 0)
    return 0;
  return 4 * x.sbh / (x.sp ? x.t : 1.0) + 4 * x.sbh * x.v / (x.h * x.t);
}

double layer_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  if (x.h <= 0 || x.t <= 0)
    return 0;
  // Replicated without SP: the QKV and first MLP matmul inputs and the
  // gradients of the two row-parallel outputs (2 s b h each); split: the
  // same tensors as the stored activations' split part.
  return x.sbh * (x.sp ? (8 + x.split) / x.t : 8 + x.split / x.t);
}

double logits_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const Shape x = shape_of(model, plan);
  if (x.h <= 0)
    return 0;
  return 2 * x.sbh / (x.sp ? x.t : 1.0) + 2 * x.sbh * x.v / (x.h * x.t);
}

double recompute_workspace_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  switch (plan.recompute) {
    case Recompute::none:
      return 0;
    case Recompute::selective:
      return scores(shape_of(model, plan));
    case Recompute::full:
      return layer_activation_bytes(model, plan, Recompute::none);
  }
  return 0;
}

}  // namespace trainsim::workloads
