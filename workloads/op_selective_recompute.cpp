#include "workloads/op_selective_recompute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace trainsim::workloads {
namespace {

constexpr const char* kExpected = "expected recompute none, selective or full for such a plan";

// The op's name up to its pass suffix: "qkv" for "qkv.dgrad".
std::string base_of(const std::string& name) {
  return name.substr(0, name.find('.'));
}

// The same GEMM with n output columns instead of op.n: FLOPs and bytes
// follow (the input and weight at the op's own bytes per element, BF16 or
// FP8, the output BF16).
TransformerOp narrowed(const TransformerOp& op, double n, std::string name) {
  TransformerOp out = op;
  const double per_batch = op.bytes / op.batch;
  const double operand_bytes = (per_batch - 2 * op.m * op.n) / (op.m * op.k + op.k * op.n);
  out.name = std::move(name);
  out.n = n;
  out.flops = 2 * op.batch * op.m * n * op.k;
  out.bytes = op.batch * (operand_bytes * (op.m * op.k + op.k * n) + 2 * op.m * n);
  return out;
}

}  // namespace

std::vector<platforms::Problem> op_selective_recompute_problems(const ModelSpec& model,
                                                                const ParallelPlan& plan) {
  std::vector<platforms::Problem> problems;
  if (plan.recompute != Recompute::selective_op)
    return problems;
  auto add = [&](std::string why) {
    problems.push_back({"plan.recompute", fmt::format("selective_op (torchtitan's per-op selective "
                                                      "checkpointing) {}; {}",
                                                      why, kExpected)});
  };
  if (model.is_moe())
    add(fmt::format(
        "with a MoE model (model.moe.experts = {}): the policy's every-second-matmul count is "
        "modelled for dense Llama blocks only (the router and the grouped expert GEMMs change it)",
        model.moe.experts));
  if (model.is_mla())
    add("with multi-head latent attention (model.attention: mla): the policy is modelled for the wq, wk, wv, "
        "wo block only");
  if (!model.swiglu)
    add("with a GeLU MLP (model.swiglu: false): the policy is modelled for Llama's w1, w3, w2 SwiGLU MLP "
        "only");
  if (!model.flash_attention)
    add("with an unfused attention core (model.flash_attention: false): the policy saves the fused SDPA "
        "kernel's output, and an unfused core's batched matmuls and softmax would be recomputed");
  if (plan.cp > 1)
    add(
        fmt::format("with context parallelism (plan.cp = {}): the ring attention's exchanges under the "
                    "policy are not modelled",
                    plan.cp));
  if (plan.tp > 1 && !plan.sequence_parallel)
    add(
        fmt::format("with tp = {} and sequence_parallel false: torchtitan's TP plan always shards the norms "
                    "(set plan.sequence_parallel: true)",
                    plan.tp));
  return problems;
}

bool op_selective_recomputes_output_projection(const ParallelPlan& plan) {
  return plan.tp == 1 || plan.pytorch();
}

std::vector<TransformerOp> op_selective_recompute_ops(const std::vector<TransformerOp>& layer_ops,
                                                      const ModelSpec& model, const LayerSetup& setup,
                                                      const ParallelPlan& plan) {
  const double head_dim = model.attention_head_dim();
  // Per TP rank, as the fused GEMMs split them (transformer_ops.cpp, Dims).
  const double kv_width = std::max(1.0, double(model.kv_heads) / setup.tp) * head_dim;
  const double ffn = double(model.ffn_hidden) / setup.tp;
  const bool redo_wo = op_selective_recomputes_output_projection(plan);
  std::vector<TransformerOp> out;
  for (const auto& op : layer_ops) {
    if (op.pass != OpPass::forward || op.attention_core)
      continue;
    if (op.kind == OpKind::elementwise) {
      out.push_back(op);
      continue;
    }
    const std::string base = base_of(op.name);
    if (base == "qkv")
      out.push_back(narrowed(op, kv_width, "qkv.recompute_wk"));
    else if (base == "mlp_up")
      out.push_back(narrowed(op, ffn, "mlp_up.recompute_w3"));
    else if (base == "proj" && redo_wo)
      out.push_back(narrowed(op, op.n, "proj.recompute_wo"));
  }
  return out;
}

double op_selective_recomputed_layer_flops(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = double(plan.micro_batch_size) * model.seq_len;
  const double d = model.attention_head_dim();
  const double h = model.hidden;
  const double width = model.kv_heads * d + model.ffn_hidden +
                       (op_selective_recomputes_output_projection(plan) ? model.heads * d : 0.0);
  return 2 * tokens * h * width / plan.tp;
}

double op_selective_layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const double t = plan.tp;
  const double tokens = double(plan.micro_batch_size) * model.seq_len / plan.cp;
  const double tokens_norm = plan.sequence_parallel && plan.tp > 1 ? tokens / t : tokens;
  const double d = model.attention_head_dim();
  const double h = model.hidden, q = model.heads * d, kv = model.kv_heads * d;
  double bytes = 2 * tokens_norm * h                                  // the block's input
                 + 2 * tokens * q / t                                 // wq
                 + 2 * tokens * kv / t                                // wv
                 + 2 * tokens * q / t + 4 * tokens * model.heads / t  // SDPA output and log-sum-exp
                 + 2 * tokens * model.ffn_hidden / t;                 // w1
  if (plan.tp > 1)
    bytes += 2 * tokens_norm * h;  // the reduce-scatter after wo
  if (plan.pytorch()) {
    bytes += 2 * tokens * h;  // w2's output (the TP partial sums)
    if (plan.tp > 1)
      bytes += 2 * tokens_norm * h;  // the reduce-scatter after w2
  }
  return bytes;
}

int op_selective_recompute_tp_all_gathers(const ParallelPlan& plan) {
  return plan.recompute == Recompute::selective_op && plan.tp > 1 ? 2 : 0;
}

}  // namespace trainsim::workloads
