#pragma once
// torchtitan's per-op selective activation checkpointing (plan.recompute:
// selective_op): activation_checkpoint.mode = "selective",
// selective_ac_option = "op" (torchtitan parallelize_llama.py,
// _apply_ac_to_transformer_block, at 9dec370 (2024-12) and 820504e
// (2025-06); torchtitan/distributed/activation_checkpoint.py, SelectiveAC,
// later). Every transformer block is wrapped in torch.utils.checkpoint with
// a policy that MUST_SAVEs the outputs of the ops in _save_list (aten.mm,
// the SDPA flash / efficient kernels, _c10d_functional.reduce_scatter_tensor,
// aten.max / abs) except every second aten.mm of the block, counted from 1
// and reset per block; every other op is recomputed before the block's
// backward. A Llama block issues its 7 matmuls in the order
//
//   1 wq  save     2 wk  recompute   3 wv  save     4 wo  recompute
//   5 w1  save     6 w3  recompute   7 w2  save
//
// (Attention.forward: wq, wk, wv, then wo after SDPA; FeedForward.forward:
// w2(silu(w1(x)) * w3(x)), Python evaluating w1 before w3). So per layer
// and micro-batch on one GPU of the TP group (T = b s tokens, t = tp, T_n =
// T / t under sequence parallelism, d head_dim, a / kv heads, f ffn):
//
//   stored   the block input 2 T_n h, wq's output 2 T a d / t, wv's
//            2 T kv d / t, SDPA's output 2 T a d / t and its fp32
//            log-sum-exp 4 T a / t, w1's output 2 T f / t; with TP the
//            reduce-scatter after wo, 2 T_n h; in eager PyTorch
//            (plan.framework pytorch_*) also w2's output 2 T h (the eager
//            checkpoint caches every MUST_SAVE output, needed or not) and
//            with TP the reduce-scatter after it, 2 T_n h. The FP8 amax
//            scalars are not counted.
//   redone   every forward element-wise kernel (norms, rotary, SwiGLU, the
//            FP8 casts, the residual adds) and the GEMMs wk [T, h] x
//            [h, kv d / t], wo [T, a d / t] x [a d / t, h] and w3 [T, h] x
//            [h, f / t]; compiled with TP, wo is not redone (the partitioner
//            rebuilds the residual from the saved reduce-scatter output).
//            Not the attention core (saved). With TP (sequence parallel)
//            the two all-gathers of the norms' outputs, which wk and w3
//            need, run again; the reduce-scatters are saved.
//
// For Llama 3 8B that is wk + wo + w3 = 36.5% of the forward's GEMM FLOPs.
// The policy is only defined here for the layers whose op sequence it was
// written against: dense (not MoE), multi-head / grouped-query attention
// (not MLA) with fused (flash) attention, SwiGLU MLP, no context
// parallelism, and sequence parallelism whenever tp > 1 (torchtitan's TP
// plan shards the norms); op_selective_recompute_problems says which rule a
// plan breaks.
#include <vector>

#include "platforms/problem.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {

// The rules above, for a plan with recompute selective_op (none otherwise).
std::vector<platforms::Problem> op_selective_recompute_problems(const ModelSpec& model,
                                                                const ParallelPlan& plan);

// Whether the recomputation redoes the output projection wo (not when a
// compiled block with TP rebuilds the residual from the saved
// reduce-scatter).
bool op_selective_recomputes_output_projection(const ParallelPlan& plan);

// What the policy redoes of one layer before its backward, from the layer's
// ops (layer_ops, after with_precision): the forward element-wise kernels
// except the attention core's, and the wk, wo and w3 GEMMs cut out of the
// fused "qkv" and "mlp_up" GEMMs at their own shapes (FP8 when those are).
std::vector<TransformerOp> op_selective_recompute_ops(const std::vector<TransformerOp>& layer_ops,
                                                      const ModelSpec& model, const LayerSetup& setup,
                                                      const ParallelPlan& plan);

// FLOPs of one layer's recomputed GEMMs, one micro-batch, one GPU of the TP
// group: 2 T h (kv d + a d + f) / t (without a d when wo is not redone).
double op_selective_recomputed_layer_flops(const ModelSpec& model, const ParallelPlan& plan);

// Bytes one layer stores for one micro-batch on one GPU (the table above).
double op_selective_layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan);

// TP all-gathers of b s h bytes the recomputation repeats per layer (2 with
// TP, else 0).
int op_selective_recompute_tp_all_gathers(const ParallelPlan& plan);

}  // namespace trainsim::workloads
