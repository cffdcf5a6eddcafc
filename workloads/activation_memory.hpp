#pragma once
// Activation memory a transformer layer keeps from its forward until its
// backward, per GPU and micro-batch (Korthikanti et al., MLSys 2023,
// "Reducing Activation Recomputation in Large Transformer Models"; formulas
// in ../shared/reference/cost-models.md: 16-bit activations, 1-byte dropout
// masks). The memory model (workloads/memory_model.hpp) and BPipe's
// evictions use these sizes.
//
// The paper counts a GPT layer (f = 4h, as many key/value heads as heads);
// here its terms are kept per tensor, so GQA and SwiGLU layers get their own
// sizes and a GPT layer gets exactly the paper's rows (s sequence, b
// micro-batch, h hidden, a heads, t TP degree):
//
//   recompute none, TP only         s b h (10 + 24/t + 5 a s / (h t))
//   recompute none, TP + SP         s b h (34 + 5 a s / h) / t
//   selective (or FlashAttention)   s b h (10 + 24/t)          34 s b h / t with SP
//   full                            2 s b h (the layer input)  2 s b h / t with SP
//   selective_op                    torchtitan's per-op policy: op_selective_recompute.hpp
//
// General layer (h_kv = h kv_heads / heads, f = ffn_hidden): the 10 s b h
// that TP does not split are the two layer-norm inputs (4), the QKV and
// first MLP matmul inputs (2 + 2) and two dropout masks (1 + 1); TP splits
// Q, K, V (2 s b h + 4 s b h_kv), the attention output (2 s b h), the MLP
// intermediates (4 s b f for GeLU: its input and the second matmul's input;
// 6 s b f for SwiGLU: gate, up and their product) and the scores
// (5 a s^2 b: softmax output, dropout mask and output). Sequence
// parallelism splits the rest too. FlashAttention never stores the scores.
// Context parallelism (cp GPUs per sequence) keeps s / cp tokens per GPU,
// so every term divides by cp.
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

// Bytes one layer stores for one micro-batch on one GPU under the plan's
// recomputation mode (table above).
double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan);
// The same under a given recomputation mode.
double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, Recompute recompute);
// A MoE layer's (moe_layer true): the MLP intermediates at expert_ffn_hidden
// for top_k x capacity_factor routed copies plus the shared experts of each
// token, and 4 bytes x h per routed copy that TP does not split (the
// permuted expert inputs and the expert outputs unpermute weights: the
// dispatch's receive buffer and the combine's send buffer). routed_load: the
// GPU's load factor in the layer under imbalanced dropless routing
// (workloads/expert_routing.hpp; 1 balanced, and always 1 under a capacity
// factor, which pads or cuts every expert to it), which scales every routed
// copy term: the GPU hosting the hot experts keeps f x top_k copies a token.
double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, Recompute recompute,
                              bool moe_layer, double routed_load = 1);

// A pipeline stage (or model chunk) of `layers` layers: what one micro-batch
// leaves behind on each GPU in its layers, and what BPipe moves to the
// acceptor stage.
// first_layer: the model index of its first layer (which of them are MoE
// layers).
double stage_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, int layers,
                              int first_layer = 0);

// The first virtual stage's extra: the embedding output's dropout mask,
// s b h bytes (/ t with SP).
double embedding_activation_bytes(const ModelSpec& model, const ParallelPlan& plan);
// The last virtual stage's extra: the final layer norm's and the output
// projection's inputs (2 s b h each, / t with SP) and the fp32 logits kept
// for the cross-entropy backward (4 s b V / t, vocabulary-parallel).
double logits_activation_bytes(const ModelSpec& model, const ParallelPlan& plan);

// Zero-bubble schedules: what a layer still holds after its input gradient
// (B) until its weight gradient (W) runs: the inputs of its four matmuls and
// the gradients of their outputs. For a GPT layer s b h (8 + 24/t), 32 s b h
// / t with SP: the 32h per token that zbv.py frees at W.
double layer_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan);
// A MoE layer's adds the permuted inputs and expert outputs (4 h per copy),
// its routed copies scaled by routed_load as above.
double layer_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer,
                                        double routed_load = 1);
// The logit layer's: the output projection's input (2 s b h, / t with SP)
// and the logits' gradient (2 s b V / t).
double logits_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan);

// The last stage's multi-token prediction modules (model.mtp_depth), per
// micro-batch: each keeps its layer's activations (a MoE layer's when the
// model's last layer is one), the inputs of its two norms and of its
// projection (the hidden state and the next token's embedding, 2 s b h
// each, and their concatenation, 4 s b h; / t with SP; the projection's
// input FP8 under FP8) and its output head's (logits_activation_bytes).
// routed_loads: the GPU's load factor in each module's MoE layer (empty: 1).
double mtp_activation_bytes(const ModelSpec& model, const ParallelPlan& plan,
                            const std::vector<double>& routed_loads = {});
// What they hold from the input gradient to the weight gradient: the
// layer's, the projection's input and the output head's.
double mtp_weight_gradient_hold_bytes(const ModelSpec& model, const ParallelPlan& plan,
                                      const std::vector<double>& routed_loads = {});

// Working memory of a backward on top of what its forward stored: full
// recomputation rebuilds one layer at a time (one layer's activations
// without recomputation), selective recomputation one layer's attention
// scores (5 a s^2 b / t; none with FlashAttention); selective_op one layer's
// recomputed tensors (its activations without recomputation less what the
// policy stored); none without.
// routed_load: the largest load factor of the GPU's MoE layers rebuilt
// (1 balanced).
double recompute_workspace_bytes(const ModelSpec& model, const ParallelPlan& plan, double routed_load = 1);

}  // namespace trainsim::workloads
