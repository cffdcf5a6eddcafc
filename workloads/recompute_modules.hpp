#pragma once
// Megatron-core's selective recomputation by module (recompute: selective
// with plan.recompute_modules; --recompute-granularity selective
// --recompute-modules ..., megatron/core/transformer/transformer_config.py
// and the modules that read it). Per layer and micro-batch on one GPU:
//
//   module        redone before the layer's backward        not stored
//   core_attn     the attention core's forward (the fused   the scores, softmax and
//                 FlashAttention kernel, or the unfused     dropout tensors (none
//                 batched matmuls and softmax)              with FlashAttention)
//   mla_up_proj   MLA's q_up (q_proj without query         the attention's Q, K, V
//                 compression) and kv_up GEMMs (FP8 casts
//                 with them) and the fused RoPE             (2 n (2 d_qk + d_v) / t
//                 (multi_latent_attention.py,               bytes a token): the
//                 qkv_up_checkpoint, output-discarding)     latents stay
//   moe_act       the routed experts' SwiGLU / GeLU         its output, the down
//                 (moe/experts.py, output-discarding)       projection's input, per
//                                                           routed copy
//   mlp           a dense layer's whole MLP (MoE layers     its intermediates (the up
//                 keep theirs: transformer_layer.py sets    projection's output and
//                 recompute_mlp for dense layers only)      the activation's)
//
// Without core_attn the attention core is not redone (Megatron-core with
// TE's fused attention needs no core_attn: its warning says so).
// Megatron's other modules (layernorm, moe, shared_experts, ...) are not
// modelled: the scenario loader refuses them by name.
#include <optional>
#include <string_view>
#include <vector>

#include "platforms/problem.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {

// The module a scenario names (Megatron's spelling), or nullopt.
std::optional<RecomputeModule> recompute_module_named(std::string_view word);

// Whether recompute selective redoes `module` (an empty list: core_attn).
bool recomputes_module(const ParallelPlan& plan, RecomputeModule module);

// Whether `op` (an op of a layer's list, after with_precision) is redone
// before the backward under recompute selective: a forward op of a chosen
// module.
bool selectively_recomputed(const TransformerOp& op, const ParallelPlan& plan);

// FLOPs of the GEMMs and attention core one layer redoes under recompute
// selective, one micro-batch, one GPU of the TP group (the table above).
double selective_recomputed_layer_flops(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer);

// Rules: modules only with recompute selective, each once, mla_up_proj with
// MLA, moe_act with a MoE model, mlp with dense layers to redo.
std::vector<platforms::Problem> recompute_modules_problems(const ModelSpec& model, const ParallelPlan& plan);

}  // namespace trainsim::workloads
