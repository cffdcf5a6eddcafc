#include "workloads/kineto/task_kernels.hpp"

#include <algorithm>
#include <cmath>

#include "platforms/efficiency_profile.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/op_selective_recompute.hpp"
#include "workloads/precision.hpp"
#include "workloads/recompute_modules.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::kineto {

using workloads::OpKind;
using workloads::OpPass;
using workloads::TaskKind;
using workloads::TransformerOp;

double TaskOps::total_s() const {
  double s = 0;
  for (double t : pass_time_s)
    s += t;
  return s;
}

std::string kernel_class_of(const TransformerOp& op) {
  switch (op.kind) {
    case OpKind::matmul:
    case OpKind::batched_matmul:
      return "gemm";
    case OpKind::attention:
      return "attention";
    case OpKind::elementwise:
      break;
  }
  if (op.name == "optimizer")
    return "optimizer";
  if (op.name.rfind("embedding", 0) == 0)
    return "embedding";
  if (op.name.find("norm") != std::string::npos)
    return "norm";
  return "elementwise";
}

TaskKernels::TaskKernels(workloads::ModelSpec model, workloads::ParallelPlan plan)
    : model_(std::move(model)), plan_(plan), layout_(workloads::layout_of(plan_)) {
  // The op lists PerOpCostModel times (cost_model_per_op.cpp, its constructor).
  const auto setup =
      workloads::layer_setup(model_, plan_.micro_batch_size, plan_.tp, plan_.sequence_parallel, plan_.ep,
                             plan_.pytorch(), plan_.moe_dispatcher, plan_.expert_tp());
  layer_ops_ = workloads::with_precision(workloads::layer_ops(model_, setup), plan_);
  if (model_.is_moe())
    moe_layer_ops_ = workloads::with_precision(workloads::moe_layer_ops(model_, setup), plan_);
  if (plan_.recompute == workloads::Recompute::selective_op)
    recompute_ops_ = workloads::op_selective_recompute_ops(layer_ops_, model_, setup, plan_);
  embedding_ops_ = workloads::embedding_ops(model_, setup);
  logits_ops_ = workloads::logits_ops(model_, setup);
}

void TaskKernels::add_pass(TaskOps& out, const std::vector<TransformerOp>& ops, OpPass pass,
                           bool attention_core_only, const platforms::GpuSpec& gpu) const {
  const auto& profile = platforms::efficiency_profile_of(gpu);
  const int index = static_cast<int>(out.pass_time_s.size());
  double device_s = 0;
  int kernels = 0;
  for (const auto& op : ops) {
    if (op.pass != pass || (attention_core_only && !op.attention_core))
      continue;
    const double t = workloads::time_op(op, gpu, profile).duration_s;
    out.ops.push_back({op, t, index});
    device_s += t;
    kernels += op.kernels;
  }
  if (kernels > 0)
    out.pass_time_s.push_back(std::max(device_s, kernels * profile.host_overhead_per_kernel_s));
}

// One layer's passes of a task of `kind`, in the order a GPU runs them.
void TaskKernels::add_layer(TaskOps& out, int layer, TaskKind kind, bool attention_core_only,
                            const platforms::GpuSpec& gpu) const {
  const auto& ops = model_.is_moe_layer(layer) ? moe_layer_ops_ : layer_ops_;
  const bool input = kind == TaskKind::backward || kind == TaskKind::backward_input;
  const bool weight = kind == TaskKind::backward || kind == TaskKind::backward_weight;
  if (kind == TaskKind::forward) {
    add_pass(out, ops, OpPass::forward, attention_core_only, gpu);
    return;
  }
  if (input) {
    // What the recomputation mode redoes before the backward (PerOpCostModel).
    switch (plan_.recompute) {
      case workloads::Recompute::none:
        break;
      case workloads::Recompute::selective: {  // the chosen modules (recompute_modules.hpp)
        std::vector<TransformerOp> redone;
        for (const auto& op : ops)
          if (workloads::selectively_recomputed(op, plan_))
            redone.push_back(op);
        add_pass(out, redone, OpPass::forward, attention_core_only, gpu);
        break;
      }
      case workloads::Recompute::full:
        add_pass(out, ops, OpPass::forward, attention_core_only, gpu);
        break;
      case workloads::Recompute::selective_op:  // dense layers only (op_selective_recompute.hpp)
        if (!attention_core_only)
          add_pass(out, recompute_ops_, OpPass::forward, false, gpu);
        break;
    }
    add_pass(out, ops, OpPass::backward_input, attention_core_only, gpu);
  }
  if (weight)
    add_pass(out, ops, OpPass::backward_weight, attention_core_only, gpu);
}

TaskOps TaskKernels::of(const workloads::Task& task, const platforms::GpuSpec& gpu) const {
  TaskOps out;
  const auto& profile = platforms::efficiency_profile_of(gpu);
  out.host_overhead_s = profile.host_overhead_per_kernel_s;
  switch (task.kind) {
    case TaskKind::send:
    case TaskKind::collective:
    case TaskKind::compute:
      return out;
    case TaskKind::optimizer: {
      // The bytes whose memory time is the step's duration (time_op is
      // monotonic in bytes): bisection in log space.
      TransformerOp op{
          .name = "optimizer", .kind = OpKind::elementwise, .kernels = workloads::kOptimizerKernels};
      const double host_s = op.kernels * profile.host_overhead_per_kernel_s;
      if (task.duration_s > host_s * (1 + 1e-9)) {
        double lo = 1, hi = 1e15;
        for (int i = 0; i < 200; ++i) {
          const double mid = std::sqrt(lo * hi);
          op.bytes = mid;
          (workloads::time_op(op, gpu, profile).duration_s < task.duration_s ? lo : hi) = mid;
        }
        op.bytes = std::sqrt(lo * hi);
      }
      const double t = workloads::time_op(op, gpu, profile).duration_s;
      out.ops.push_back({op, t, 0});
      out.pass_time_s.push_back(std::max(t, host_s));
      return out;
    }
    case TaskKind::forward:
    case TaskKind::backward:
    case TaskKind::backward_input:
    case TaskKind::backward_weight:
      break;
  }
  const auto slice = workloads::virtual_stage_slice(
      model_, plan_, layout_.virtual_stage(std::max(0, task.stage), task.chunk));
  const bool forward = task.kind == TaskKind::forward;
  const bool input = task.kind == TaskKind::backward || task.kind == TaskKind::backward_input;
  const bool weight = task.kind == TaskKind::backward || task.kind == TaskKind::backward_weight;
  if (task.layer >= 0) {
    // A piece of an op: one layer (FSDP units, gradient buckets), or its
    // attention core (ring attention).
    add_layer(out, task.layer, task.kind, task.attention, gpu);
    return out;
  }
  if (forward && slice.embedding)
    add_pass(out, embedding_ops_, OpPass::forward, false, gpu);
  if (!forward && slice.logits) {
    if (input)
      add_pass(out, logits_ops_, OpPass::backward_input, false, gpu);
    if (weight)
      add_pass(out, logits_ops_, OpPass::backward_weight, false, gpu);
  }
  for (int i = 0; i < slice.layers; ++i) {
    const int layer = forward ? slice.first_layer + i : slice.first_layer + slice.layers - 1 - i;
    add_layer(out, layer, task.kind, false, gpu);
  }
  if (forward && slice.logits)
    add_pass(out, logits_ops_, OpPass::forward, false, gpu);
  if (weight && slice.embedding)
    add_pass(out, embedding_ops_, OpPass::backward_weight, false, gpu);
  return out;
}

}  // namespace trainsim::kineto
