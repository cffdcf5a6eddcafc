#pragma once
// The kernels one GPU of a tensor-parallel group runs for one micro-batch:
// per transformer layer (Megatron's GPT layer, or a Llama layer with
// grouped-query attention and SwiGLU), for the embedding, and for the logits
// and loss. Each op carries the FLOPs it executes, the HBM bytes it moves and
// its matmul shape; the per-op cost model (cost_model_per_op.hpp) times them.
//
// One layer, forward (t = TP degree, T = b x s tokens, d = head dim):
//   norm -> QKV matmul [T, h] x [h, (a + 2 kv) d / t] -> (RoPE) ->
//   attention core: scores bmm [s, d] x [d, s] per head, softmax, dropout,
//     context bmm [s, s] x [s, d]   | or one FlashAttention kernel
//   -> output matmul [T, a d / t] x [a d / t, h] -> (TP all-reduce) ->
//   bias + dropout + residual -> norm -> MLP up [T, h] x [h, f/t] (x2 gated)
//   -> GeLU | SwiGLU -> MLP down [T, f/t] x [f/t, h] -> (TP all-reduce) ->
//   bias + dropout + residual
// With qk_norm (Qwen3) an RMSNorm over each head's query and key follows the
// QKV matmul. A multi-head latent attention layer (model.attention: mla)
// replaces QKV, RoPE and the core by MLA's down projections, latent norms,
// up projections, fused RoPE and a core over d_qk / d_v
// (mla_attention.hpp; transformer_ops.cpp, mla_attention).
// The TP collectives are not ops here: the iteration builder adds them as
// communication tasks.
#include <string>
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

enum class OpKind {
  matmul,          // dense GEMM
  batched_matmul,  // per-head GEMMs of an unfused attention
  attention,       // one fused FlashAttention kernel
  elementwise,     // memory-bound: norms, softmax, dropout, activations, copies
};

// Which part of the training step an op belongs to. Zero-bubble schedules run
// backward_input (B) and backward_weight (W) as separate tasks.
enum class OpPass { forward, backward_input, backward_weight };

struct TransformerOp {
  std::string name;  // "qkv", "qkv.dgrad", "softmax.bwd", ...
  OpKind kind = OpKind::elementwise;
  OpPass pass = OpPass::forward;
  // Part of the attention core (scores, softmax, dropout, context): what
  // selective recomputation redoes.
  bool attention_core = false;
  // Matmuls: [m, k] x [k, n], `batch` times. Attention: m = seq_len,
  // k = head_dim.
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0;  // executed (a causal FlashAttention kernel skips half)
  double bytes = 0;  // HBM traffic
  int kernels = 1;   // kernel launches
  // A GEMM on the FP8 tensor cores (workloads/precision.hpp).
  bool fp8 = false;
  // ... with MXFP8 block scaling: its own curves where the GPU's profile has
  // them (Blackwell's MXFP8 GEMMs run slower than per-tensor FP8 ones).
  bool mxfp8 = false;
};

// How a layer is laid out on one GPU.
struct LayerSetup {
  double micro_batch = 1;
  int tp = 1;
  // Megatron sequence parallelism: norms, dropouts and residuals run on
  // T / t tokens.
  bool sequence_parallel = false;
  bool flash_attention = false;
  // GPT-style layers train with dropout (Megatron default 0.1, attention and
  // hidden); Llama-style layers without.
  bool dropout = true;
  // Expert parallelism: a MoE layer's experts spread over ep GPUs.
  int ep = 1;
  // Expert tensor parallelism (plan.expert_tensor_parallel): 0 follows tp.
  // Below tp each GPU routes its own sequence-parallel tokens and runs its
  // experts on expert_tp / tp of the tokens at expert_ffn / expert_tp.
  int expert_tp = 0;
  // Routing imbalance: the GPU's local experts receive this many times the
  // balanced share of token copies (workloads/expert_routing.hpp; 1:
  // balanced, and always under a capacity factor).
  double expert_load = 1;
  // How the tokens reach the experts (plan.moe_dispatcher): Megatron's
  // alltoall dispatcher sorts the received tokens by local expert and back
  // (workloads/moe_token_sort.hpp).
  MoeDispatcher moe_dispatcher = MoeDispatcher::all_to_all;
  // PyTorch eager model code (Hugging Face transformers' and IBM fms' Llama):
  // RMSNorm, the rotary embedding and SwiGLU run as separate element-wise
  // kernels instead of Megatron's fused ones, the attention output is made
  // contiguous, and under FSDP the weight gradients go straight to the
  // reduce-scatter (no accumulation into a .grad buffer).
  bool eager_pytorch = false;
};

// The setup the model and plan imply (dropout: GPT-style layers only).
LayerSetup layer_setup(const ModelSpec& model, double micro_batch, int tp, bool sequence_parallel = false,
                       int ep = 1, bool eager_pytorch = false,
                       MoeDispatcher moe_dispatcher = MoeDispatcher::all_to_all, int expert_tp = 0);

// Every op of one transformer layer, all passes, in execution order within a
// pass.
std::vector<TransformerOp> layer_ops(const ModelSpec& model, const LayerSetup& setup);
// The same for a MoE layer (model.moe): attention as in layer_ops, then the
// router, permute, the local experts' grouped GEMMs, unpermute and the
// shared experts instead of the MLP (transformer_ops.cpp, moe_mlp).
std::vector<TransformerOp> moe_layer_ops(const ModelSpec& model, const LayerSetup& setup);
std::vector<TransformerOp> layer_ops(const ModelSpec& model, const LayerSetup& setup, bool moe);
// Token (and learned position) embedding, with its dropout.
std::vector<TransformerOp> embedding_ops(const ModelSpec& model, const LayerSetup& setup);
// Final norm, output projection (vocabulary split over the TP group) and the
// vocabulary-parallel cross-entropy in fp32 (Megatron's default).
std::vector<TransformerOp> logits_ops(const ModelSpec& model, const LayerSetup& setup);

// One multi-token prediction module's own kernels (model.mtp_depth;
// DeepSeek-V3 Section 2.2, Megatron-core multi_token_prediction.py): the
// RMSNorms of the hidden state and of the next token's embedding, their
// concatenation and the 2h x h projection (eh_proj, column-parallel), all
// passes. Its transformer layer and output head are a layer's and the
// logits' ops.
std::vector<TransformerOp> mtp_ops(const ModelSpec& model, const LayerSetup& setup);

// Bytes the optimizer step moves per local parameter: Megatron's
// mixed-precision Adam copies the 16-bit gradient into an fp32 main gradient
// (2 + 4), unscales it and checks for inf/nan (4 + 4), takes its norm for
// clipping (4), steps Adam over master weight, gradient and both moments
// (4 x 4 read, 3 x 4 written) and writes the 16-bit weight back (4 + 2).
inline constexpr double kOptimizerBytesPerParameter = 52;
// Kernel launches of one optimizer step (multi-tensor apply, all parameters
// of a GPU in a few launches per pass).
inline constexpr int kOptimizerKernels = 10;

}  // namespace trainsim::workloads
