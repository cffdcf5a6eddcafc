#include "workloads/precision.hpp"

#include <string>

namespace trainsim::workloads {
namespace {

// MXFP8: one E8M0 scale byte per 32 elements of every quantized copy.
constexpr double kMxfp8ScaleBytes = 1.0 / 32;

bool mxfp8(const ParallelPlan& plan) {
  return plan.fp8_recipe == Fp8Recipe::mxfp8;
}

// The op's name up to its pass suffix: "qkv" for "qkv.dgrad".
std::string base_name(const std::string& name) {
  return name.substr(0, name.find('.'));
}

// GEMMs whose input TE's LayerNormLinear produces from the norm before them
// (Megatron-core's TELayerNormColumnParallelLinear): the cast is fused into
// the norm, and under sequence parallelism the input is the all-gathered one.
// MLA's up projections fuse the latent norms the same way (Megatron's MLA
// spec builds linear_q_up_proj and linear_kv_up_proj as
// TELayerNormColumnParallelLinear); its down projections and q_proj are
// plain TELinear / TEColumnParallelLinear, each quantizing its input.
const char* fused_norm_of(const std::string& base) {
  if (base == "qkv")
    return "norm1";
  if (base == "mlp_up")
    return "norm2";
  if (base == "q_up")
    return "q_norm";
  if (base == "kv_up")
    return "kv_norm";
  return nullptr;
}

// Bytes per element of one FP8 copy written (the data, and MXFP8's scales).
double fp8_copy_bytes(const ParallelPlan& plan) {
  return 1 + (mxfp8(plan) ? kMxfp8ScaleBytes : 0.0);
}

// Whether the GEMM's input is all-gathered over the TP group (sequence
// parallelism): then the norm before it casts its T / t tokens.
bool gathered_input(const ParallelPlan& plan, const std::string& base) {
  return plan.sequence_parallel && plan.tp > 1 && fused_norm_of(base) != nullptr;
}

// Copies a forward cast writes: the row-wise FP8 input, plus the transposed
// (Hopper) or column-wise (MXFP8) one that the wgrad reads, unless the input
// is all-gathered first (Hopper recipes transpose the gathered input in the
// backward instead).
int forward_copies(const ParallelPlan& plan, const std::string& base) {
  return mxfp8(plan) || !gathered_input(plan, base) ? 2 : 1;
}

// A quantization kernel: current scaling reads its input once more for the
// amax (a kernel of its own) before the cast reads it and writes `copies`.
TransformerOp quantize(std::string name, OpPass pass, double elements, int copies, const ParallelPlan& plan) {
  const bool current = plan.fp8_recipe == Fp8Recipe::current;
  return {.name = std::move(name),
          .kind = OpKind::elementwise,
          .pass = pass,
          .bytes = elements * ((current ? 2 : 0) + 2 + copies * fp8_copy_bytes(plan)),
          .kernels = current ? 2 : 1};
}

// The same GEMM with its two operands in FP8 and its output in BF16.
TransformerOp fp8_gemm(TransformerOp op, const ParallelPlan& plan) {
  op.fp8 = true;
  op.mxfp8 = mxfp8(plan);
  op.bytes = op.batch * ((op.m * op.k + op.k * op.n) * fp8_copy_bytes(plan) + 2 * op.m * op.n);
  return op;
}

}  // namespace

bool runs_in_fp8(const TransformerOp& op) {
  if (op.attention_core)
    return false;
  if (op.kind != OpKind::matmul && op.kind != OpKind::batched_matmul)
    return false;
  const std::string base = base_name(op.name);
  return base != "router" && base != "logits";
}

std::vector<TransformerOp> with_precision(std::vector<TransformerOp> ops, const ParallelPlan& plan) {
  if (!plan.fp8())
    return ops;
  std::vector<TransformerOp> out;
  out.reserve(ops.size() * 2);
  for (auto& op : ops) {
    if (!runs_in_fp8(op)) {
      out.push_back(std::move(op));
      continue;
    }
    const std::string base = base_name(op.name);
    switch (op.pass) {
      case OpPass::forward: {
        // The input, [m, k] per batch entry, cast where it is computed: on
        // T / t tokens before a sequence-parallel all-gather.
        const double elements = op.m * op.k * op.batch / (gathered_input(plan, base) ? plan.tp : 1);
        const int copies = forward_copies(plan, base);
        const char* norm = fused_norm_of(base);
        TransformerOp* producer = nullptr;
        if (norm != nullptr && plan.fp8_recipe != Fp8Recipe::current && !plan.pytorch())
          for (auto it = out.rbegin(); it != out.rend() && producer == nullptr; ++it)
            if (it->name == norm)
              producer = &*it;
        if (producer != nullptr)  // the norm writes FP8 copies instead of its BF16 output
          producer->bytes += elements * (copies * fp8_copy_bytes(plan) - 2);
        else
          out.push_back(quantize(base + ".quantize", op.pass, elements, copies, plan));
        break;
      }
      case OpPass::backward_input:
        // The output gradient dY, [m, k] of the dgrad: cast for the dgrad and
        // transposed (column-wise) for the wgrad.
        out.push_back(quantize(op.name + ".quantize", op.pass, op.m * op.k * op.batch, 2, plan));
        break;
      case OpPass::backward_weight:
        if (forward_copies(plan, base) == 1)  // the gathered FP8 input, transposed: read 1, write 1
          out.push_back({.name = op.name + ".transpose",
                         .kind = OpKind::elementwise,
                         .pass = op.pass,
                         .bytes = 2 * op.m * op.k * op.batch});
        break;
    }
    out.push_back(fp8_gemm(std::move(op), plan));
  }
  return out;
}

double saved_linear_input_bytes(const ParallelPlan& plan) {
  return plan.fp8() ? fp8_copy_bytes(plan) : 2.0;
}

double fp8_weight_cast_bytes_per_parameter(const ParallelPlan& plan) {
  if (!plan.fp8())
    return 0;
  const double amax = plan.fp8_recipe == Fp8Recipe::current ? 1.0 : 0.0;
  if (plan.fp8_param_gather)  // the optimizer writes the FP8 weight for the BF16 one; current scaling's amax
                              // reads the FP32 master first
    return amax * 4;
  return amax * 2 + 2 + 2 * fp8_copy_bytes(plan);
}

double fp8_weight_copy_bytes_per_parameter(const ParallelPlan& plan) {
  if (!plan.fp8())
    return 0;
  if (plan.fp8_param_gather)  // FP8 weight + transpose take the BF16 weight's 2 bytes
    return 2 * fp8_copy_bytes(plan) - 2;
  return 2 * fp8_copy_bytes(plan);
}

double param_gather_bytes_per_parameter(const ParallelPlan& plan, double fp8_share) {
  if (!plan.fp8() || !plan.fp8_param_gather)
    return 2;
  return 2 * (1 - fp8_share) + fp8_copy_bytes(plan) * fp8_share;
}

double tp_collective_byte_factor(const ParallelPlan& plan, bool all_gather) {
  return plan.fp8() && plan.sequence_parallel && all_gather ? 0.5 : 1.0;
}

}  // namespace trainsim::workloads
