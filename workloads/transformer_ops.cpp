#include "workloads/transformer_ops.hpp"

#include <algorithm>

#include "workloads/moe_token_sort.hpp"

namespace trainsim::workloads {
namespace {

constexpr double kActivationBytes = 2;  // bf16 / fp16 activations and weights

// Appends ops in order; the helpers know how each kind of kernel moves data.
class OpList {
 public:
  // A GEMM [m, k] x [k, n] reading both operands and writing the output once.
  void matmul(std::string name, OpPass pass, double m, double n, double k, bool core = false) {
    add({.name = std::move(name),
         .kind = OpKind::matmul,
         .pass = pass,
         .attention_core = core,
         .m = m,
         .n = n,
         .k = k,
         .flops = 2 * m * n * k,
         .bytes = kActivationBytes * (m * k + k * n + m * n)});
  }
  // Per-head attention GEMMs (attention core), or a MoE layer's grouped
  // expert GEMMs (not).
  void batched_matmul(std::string name, OpPass pass, double batch, double m, double n, double k,
                      bool core = true) {
    add({.name = std::move(name),
         .kind = OpKind::batched_matmul,
         .pass = pass,
         .attention_core = core,
         .m = m,
         .n = n,
         .k = k,
         .batch = batch,
         .flops = 2 * batch * m * n * k,
         .bytes = kActivationBytes * batch * (m * k + k * n + m * n)});
  }
  // `bytes_per_element` counts every read and write of the kernel.
  void elementwise(std::string name, OpPass pass, double elements, double bytes_per_element, int kernels = 1,
                   bool core = false) {
    add({.name = std::move(name),
         .kind = OpKind::elementwise,
         .pass = pass,
         .attention_core = core,
         .bytes = elements * bytes_per_element,
         .kernels = kernels});
  }
  void add(TransformerOp op) { ops_.push_back(std::move(op)); }
  std::vector<TransformerOp> take() { return std::move(ops_); }

 private:
  std::vector<TransformerOp> ops_;
};

struct Dims {
  double b, s, h, tokens, tokens_norm;  // tokens_norm: what norms and residuals see
  double head_dim, heads, kv_heads;     // per TP rank
  double ffn;                           // per TP rank
  double qkv_out;                       // (heads + 2 kv_heads) x head_dim
  double vocab;                         // per TP rank
  // Multi-head latent attention (mla_attention.hpp): head widths, latent
  // ranks (q_lora 0: no query compression) and the rotary width.
  double qk_dim = 0, v_dim = 0, nope_dim = 0, rope_dim = 0, q_lora = 0, kv_lora = 0;
};

Dims dims_of(const ModelSpec& model, const LayerSetup& setup) {
  Dims d{};
  const double t = setup.tp;
  d.b = setup.micro_batch;
  d.s = model.seq_len;
  d.h = model.hidden;
  d.tokens = d.b * d.s;
  d.tokens_norm = setup.sequence_parallel ? d.tokens / t : d.tokens;
  d.head_dim = model.attention_head_dim();
  d.heads = model.heads / t;
  // Megatron keeps at least one key/value head per rank (replicated when
  // kv_heads < t).
  d.kv_heads = std::max(1.0, model.kv_heads / t);
  d.ffn = model.ffn_hidden / t;
  d.qkv_out = (d.heads + 2 * d.kv_heads) * d.head_dim;
  d.vocab = model.vocab / t;
  if (model.is_mla()) {
    const auto& a = model.mla;
    d.qk_dim = a.qk_head_dim();
    d.v_dim = a.v_head_dim;
    d.nope_dim = a.qk_nope_head_dim;
    d.rope_dim = a.qk_rope_head_dim;
    d.q_lora = a.q_lora_rank;
    d.kv_lora = a.kv_lora_rank;
  }
  return d;
}

// The attention core without FlashAttention (MHA / GQA with qk_dim = v_dim
// = head_dim, MLA with its own): per-head GEMMs over the s x s scores of
// `batch` = b x heads matrices, and the fused scale + causal mask + softmax
// (and dropout) in place over them.
void unfused_attention_core(OpList& ops, const LayerSetup& setup, OpPass pass, double batch, double s,
                            double qk_dim, double v_dim) {
  const double scores = batch * s * s;  // elements of the s x s score matrices
  if (pass == OpPass::forward) {
    ops.batched_matmul("scores", pass, batch, s, s, qk_dim);  // Q K^T
    ops.elementwise("softmax", pass, scores, 2 + 2, 1, true);
    if (setup.dropout)
      ops.elementwise("attention_dropout", pass, scores, 2 + 2 + 1, 1, true);
    ops.batched_matmul("context", pass, batch, s, v_dim, s);  // P V
    return;
  }
  ops.batched_matmul("context.dgrad_probs", pass, batch, s, s, v_dim);   // dP = dO V^T
  ops.batched_matmul("context.dgrad_values", pass, batch, s, v_dim, s);  // dV = P^T dO
  if (setup.dropout)
    ops.elementwise("attention_dropout.bwd", pass, scores, 2 + 1 + 2, 1, true);
  ops.elementwise("softmax.bwd", pass, scores, 2 + 2 + 2, 1, true);
  ops.batched_matmul("scores.dgrad_query", pass, batch, s, qk_dim, s);  // dQ = dS K
  ops.batched_matmul("scores.dgrad_key", pass, batch, s, qk_dim, s);    // dK = dS^T Q
}

void attention_core(OpList& ops, const Dims& d, const LayerSetup& setup, OpPass pass) {
  const double batch = d.b * d.heads;
  if (setup.flash_attention) {
    // FlashAttention-2 with a causal mask skips the blocks above the
    // diagonal: half of the 4 b s^2 (a d) / t FLOPs of the forward, and of
    // the backward's 5 matmuls (it recomputes the scores).
    const double io = kActivationBytes * d.tokens * d.head_dim * (2 * d.heads + 2 * d.kv_heads);
    if (pass == OpPass::forward) {
      ops.add({.name = "flash_attention",
               .kind = OpKind::attention,
               .pass = pass,
               .attention_core = true,
               .m = d.s,
               .k = d.head_dim,
               .batch = batch,
               .flops = 0.5 * 4 * batch * d.s * d.s * d.head_dim,
               .bytes = io});
    } else {
      ops.add({.name = "flash_attention.bwd",
               .kind = OpKind::attention,
               .pass = pass,
               .attention_core = true,
               .m = d.s,
               .k = d.head_dim,
               .batch = batch,
               .flops = 0.5 * 10 * batch * d.s * d.s * d.head_dim,
               .bytes = 2 * io,
               .kernels = 2});  // the dO . O preprocessing kernel, then the backward
    }
    return;
  }
  unfused_attention_core(ops, setup, pass, batch, d.s, d.head_dim, d.head_dim);
}

// The MLP of a MoE layer, one pass, on one GPU of the TP group (expert
// tensor parallelism = tp, so every expert's inner size is split over the
// TP group like a dense MLP's). Forward: router GEMM [T, h] x [h, E] (not
// split by TP) and its fp32 softmax + top-k; permute (gather each token's
// top_k copies into per-expert order, padded to capacity); the E / ep local
// experts as grouped GEMMs (Megatron's --moe-grouped-gemm: one kernel over
// equal shapes), each on T x top_k x capacity x ep / E tokens: the balanced
// share of the ep GPUs' tokens the EP all-to-all brings it; unpermute
// (weighted sum of the top_k outputs back into token order); the shared
// experts as one dense MLP of shared x expert_ffn. The all-to-alls
// themselves are communication tasks (iteration builder). Returns, for the
// weight-gradient pass, the local MLP weights whose gradients accumulate.
//
// Expert tensor parallelism te below t (Megatron's parallel folding): the
// MoE layer's input stays sequence-parallel, so the router, permute and
// dispatch see the GPU's own T / t tokens, and after the all-to-all (and
// the expert-TP all-gather when te > 1, token_dispatcher.py) each local
// expert runs on T x te / t x top_k x capacity x ep / E rows at
// expert_ffn / te. The shared experts stay on the dense TP group: all T
// tokens at shared x expert_ffn / t.
double moe_mlp(OpList& ops, const ModelSpec& model, const LayerSetup& setup, const Dims& d, OpPass pass) {
  const auto& moe = model.moe;
  const bool gated = model.swiglu;
  const double t = setup.tp;
  const double te = setup.expert_tp > 0 ? setup.expert_tp : setup.tp;
  const double tokens = te == t ? d.tokens : d.tokens * te / t;  // what the experts see
  // What the router sees: the GPU's own sequence-parallel tokens when te <
  // t (the expert-TP all-gather comes after it, with the dispatch).
  const double own = te == t ? d.tokens : d.tokens / t;
  const double experts = moe.experts;
  const double local_experts = experts / setup.ep;
  const double routed = tokens * moe.top_k * moe.capacity_factor;  // token copies through the experts
  // Rows of each local expert's GEMM: the balanced share, times the GPU's
  // load factor under imbalanced routing (the mean over its experts: one
  // grouped GEMM over all of them).
  const double per_expert = routed * setup.ep / experts * setup.expert_load;
  const double f = moe.expert_ffn_hidden / te;
  const double up = gated ? 2 * f : f;
  const double shared_f = moe.shared_experts * (moe.expert_ffn_hidden / t);
  const double shared_up = gated ? 2 * shared_f : shared_f;
  // Token copies on this GPU: what the local experts process.
  const double local_rows = per_expert * local_experts;
  // Rows a GPU permutes before the dispatch and unpermutes after the
  // combine: its own tokens' copies, 1 / te of what its experts run after
  // the expert-TP all-gather.
  const double own_rows = te == t ? local_rows : local_rows / te;
  // The dispatcher's reorder of the received tokens by local expert and
  // back (moe_token_sort.hpp).
  auto sort = [&](OpPass p, SortSide side) {
    for (auto& op : expert_sort_ops(setup.moe_dispatcher, local_experts, local_rows, d.h, p, side))
      ops.add(std::move(op));
  };
  auto activation = [&](const std::string& name, OpPass p, double elements) {
    if (p == OpPass::forward)
      ops.elementwise(name, p, elements, gated ? 2 + 2 + 2 : 2 + 2);
    else
      ops.elementwise(name + ".bwd", p, elements, gated ? 2 + 2 + 2 + 2 + 2 : 2 + 2 + 2);
  };
  switch (pass) {
    case OpPass::forward:
      ops.matmul("router", pass, own, experts, d.h);
      // fp32 logits: cast, softmax, top-k selection and the routing map.
      ops.elementwise("router_topk", pass, own * experts, 2 + 4 + 4 + 4, 3);
      ops.elementwise("permute", pass, own_rows * d.h, 2 + 2);
      sort(pass, SortSide::after_dispatch);
      ops.batched_matmul("experts_up", pass, local_experts, per_expert, up, d.h, false);
      activation("experts_act", pass, local_rows * f);
      ops.batched_matmul("experts_down", pass, local_experts, per_expert, d.h, f, false);
      sort(pass, SortSide::before_combine);
      ops.elementwise("unpermute", pass, own_rows * d.h, 2 + 2 + 2);
      if (shared_f > 0) {
        ops.matmul("shared_up", pass, d.tokens, shared_up, d.h);
        activation("shared_act", pass, d.tokens * shared_f);
        ops.matmul("shared_down", pass, d.tokens, d.h, shared_f);
      }
      return 0;
    case OpPass::backward_input:
      if (shared_f > 0) {
        ops.matmul("shared_down.dgrad", pass, d.tokens, shared_f, d.h);
        activation("shared_act", pass, d.tokens * shared_f);
        ops.matmul("shared_up.dgrad", pass, d.tokens, d.h, shared_up);
      }
      ops.elementwise("unpermute.bwd", pass, own_rows * d.h, 2 + 2 + 2);
      sort(pass, SortSide::before_combine);
      ops.batched_matmul("experts_down.dgrad", pass, local_experts, per_expert, f, d.h, false);
      activation("experts_act", pass, local_rows * f);
      ops.batched_matmul("experts_up.dgrad", pass, local_experts, per_expert, d.h, up, false);
      sort(pass, SortSide::after_dispatch);
      ops.elementwise("permute.bwd", pass, own_rows * d.h, 2 + 2 + 2);
      ops.elementwise("router_topk.bwd", pass, own * experts, 4 + 4 + 4 + 2, 2);
      ops.matmul("router.dgrad", pass, own, d.h, experts);
      return 0;
    case OpPass::backward_weight:
      ops.batched_matmul("experts_down.wgrad", pass, local_experts, f, d.h, per_expert, false);
      ops.batched_matmul("experts_up.wgrad", pass, local_experts, d.h, up, per_expert, false);
      if (shared_f > 0) {
        ops.matmul("shared_down.wgrad", pass, shared_f, d.h, d.tokens);
        ops.matmul("shared_up.wgrad", pass, d.h, shared_up, d.tokens);
      }
      ops.matmul("router.wgrad", pass, d.h, experts, own);
      return d.h * experts + local_experts * (d.h * up + f * d.h) + d.h * shared_up + shared_f * d.h;
  }
  return 0;
}

// Element-wise kernels of PyTorch eager Llama code, bytes read and written
// per element (bf16 = 2, fp32 = 4) and kernel launches, counted from Hugging
// Face transformers' modeling_llama.py (LlamaRMSNorm, apply_rotary_pos_emb /
// rotate_half, LlamaMLP), which IBM's fms and torchtitan's Llama follow:
//   RMSNorm: x.to(fp32) [2 -> 4], pow(2) [4 -> 4], mean [4], + eps, rsqrt,
//     x * rsqrt [4 -> 4], .to(bf16) [4 -> 2], weight * x [2 -> 2]:
//     36 B, 7 kernels; its autograd backward about twice that (the fp32
//     products and reductions again, plus the weight gradient's reduction
//     and the residual fork's add): 78 B, 13 kernels.
//   Rotary embedding, per tensor (q, then k): neg of one half [2], cat [4],
//     x * cos [4], rotate_half(x) * sin [4], add [6]: 20 B, 5 kernels; the
//     backward the same traffic in 6 kernels (the slices' gradients are
//     padded and added).
//   SwiGLU: silu(gate) [4], * up [6]: 10 B, 2 kernels; backward: the two
//     products' gradients and silu's: 18 B, 3 kernels.
// Megatron fuses each of these into one or two kernels of 4-10 B.
struct Eager {
  double norm_bytes = 36, norm_bwd_bytes = 78;
  int norm_kernels = 7, norm_bwd_kernels = 13;
  double rope_bytes = 20, rope_bwd_bytes = 20;
  int rope_kernels = 5, rope_bwd_kernels = 6;
  double swiglu_bytes = 10, swiglu_bwd_bytes = 18;
  int swiglu_kernels = 2, swiglu_bwd_kernels = 3;
};

// GPT-style layers (LayerNorm) use torch's fused layer_norm: one kernel, as
// Megatron's.
Eager eager_kernels(bool rms_norm) {
  Eager e;
  if (!rms_norm) {
    e.norm_bytes = 2 + 2;
    e.norm_kernels = 1;
    e.norm_bwd_bytes = 2 + 2 + 2 + 2 + 2;
    e.norm_bwd_kernels = 2;
  }
  return e;
}

// Multi-head latent attention's core (mla_attention.hpp): scores over
// qk_dim (the non-rotary and rotary parts together), context over v_dim.
// FlashAttention-2 runs it as one kernel (head dims 192 / 128 for
// DeepSeek-V3), skipping the masked half under the causal mask: forward
// 2 b s^2 n (d_qk + d_v) / 2, backward (the scores recomputed, dP, dV, dQ,
// dK) 2 b s^2 n (3 d_qk + 2 d_v) / 2.
void mla_attention_core(OpList& ops, const Dims& d, const LayerSetup& setup, OpPass pass) {
  const double batch = d.b * d.heads;
  const double scores = batch * d.s * d.s;
  if (setup.flash_attention) {
    const double io = kActivationBytes * d.tokens * d.heads * (2 * d.qk_dim + 2 * d.v_dim);  // Q, K, V, O
    const bool forward = pass == OpPass::forward;
    ops.add({.name = forward ? "flash_attention" : "flash_attention.bwd",
             .kind = OpKind::attention,
             .pass = pass,
             .attention_core = true,
             .m = d.s,
             .k = d.qk_dim,
             .batch = batch,
             .flops = 0.5 * 2 * scores * (forward ? d.qk_dim + d.v_dim : 3 * d.qk_dim + 2 * d.v_dim),
             .bytes = forward ? io : 2 * io,
             .kernels = forward ? 1 : 2});
    return;
  }
  unfused_attention_core(ops, setup, pass, batch, d.s, d.qk_dim, d.v_dim);
}

// One pass of an MLA block after the layer's input norm and before its
// residual, on one GPU of the TP group (mla_attention.hpp has the GEMMs and
// Megatron's modules). The down projections are duplicated on every TP
// rank and run on the tokens the norms see (T / t with sequence
// parallelism, T without); the latent norms too. The up projections and
// the output projection split the heads. The rotary embedding is
// Megatron's fused MLA RoPE (fused_apply_mla_rope_for_q / _kv): it reads q
// and the up-projected k_nope, v plus the shared k_pe, and writes the
// attention's Q, K and V, per token 2 (n d_qk + n (d_nope + d_v) + d_rope)
// read and 2 n (2 d_qk + d_v) written. Returns, for the weight-gradient
// pass, the local weights whose gradients accumulate.
double mla_attention(OpList& ops, const Dims& d, const LayerSetup& setup, const Eager& e, OpPass pass) {
  const double n = d.heads;  // per TP rank
  const double latent_tokens = d.tokens_norm;
  const bool compress_q = d.q_lora > 0;
  const double q_out = n * d.qk_dim, kv_down_out = d.kv_lora + d.rope_dim,
               kv_up_out = n * (d.nope_dim + d.v_dim);
  const double o_in = n * d.v_dim;
  const double rope_bytes = 2 * (q_out + kv_up_out + d.rope_dim) + 2 * n * (2 * d.qk_dim + d.v_dim);
  const bool eager = setup.eager_pytorch;
  auto norm = [&](const char* name, double elements) {
    if (eager)
      ops.elementwise(name, pass, elements, e.norm_bytes, e.norm_kernels);
    else
      ops.elementwise(name, pass, elements, 2 + 2);
  };
  auto norm_bwd = [&](const char* name, double elements) {
    if (eager)
      ops.elementwise(name, pass, elements, e.norm_bwd_bytes, e.norm_bwd_kernels);
    else
      ops.elementwise(name, pass, elements, 2 + 2 + 2 + 2 + 2, 2);
  };
  switch (pass) {
    case OpPass::forward:
      if (compress_q) {
        ops.matmul("q_down", pass, latent_tokens, d.q_lora, d.h);
        norm("q_norm", latent_tokens * d.q_lora);
        ops.matmul("q_up", pass, d.tokens, q_out, d.q_lora);
      } else {
        ops.matmul("q_proj", pass, d.tokens, q_out, d.h);
      }
      ops.matmul("kv_down", pass, latent_tokens, kv_down_out, d.h);
      norm("kv_norm", latent_tokens * d.kv_lora);
      ops.matmul("kv_up", pass, d.tokens, kv_up_out, d.kv_lora);
      ops.elementwise("rope", pass, d.tokens, rope_bytes, 2);
      mla_attention_core(ops, d, setup, pass);
      if (eager)
        ops.elementwise("attention_out_copy", pass, d.tokens * o_in, 2 + 2);
      ops.matmul("proj", pass, d.tokens, d.h, o_in);
      return 0;
    case OpPass::backward_input:
      ops.matmul("proj.dgrad", pass, d.tokens, o_in, d.h);
      if (eager)
        ops.elementwise("attention_out_copy.bwd", pass, d.tokens * o_in, 2 + 2);
      mla_attention_core(ops, d, setup, pass);
      ops.elementwise("rope.bwd", pass, d.tokens, rope_bytes, 2);
      ops.matmul("kv_up.dgrad", pass, d.tokens, d.kv_lora, kv_up_out);
      norm_bwd("kv_norm.bwd", latent_tokens * d.kv_lora);
      ops.matmul("kv_down.dgrad", pass, latent_tokens, d.h, kv_down_out);
      if (compress_q) {
        ops.matmul("q_up.dgrad", pass, d.tokens, d.q_lora, q_out);
        norm_bwd("q_norm.bwd", latent_tokens * d.q_lora);
        ops.matmul("q_down.dgrad", pass, latent_tokens, d.h, d.q_lora);
      } else {
        ops.matmul("q_proj.dgrad", pass, d.tokens, d.h, q_out);
      }
      return 0;
    case OpPass::backward_weight:
      ops.matmul("proj.wgrad", pass, o_in, d.h, d.tokens);
      ops.matmul("kv_up.wgrad", pass, d.kv_lora, kv_up_out, d.tokens);
      ops.matmul("kv_down.wgrad", pass, d.h, kv_down_out, latent_tokens);
      if (compress_q) {
        ops.matmul("q_up.wgrad", pass, d.q_lora, q_out, d.tokens);
        ops.matmul("q_down.wgrad", pass, d.h, d.q_lora, latent_tokens);
        return o_in * d.h + d.kv_lora * kv_up_out + d.h * kv_down_out + d.q_lora * q_out + d.h * d.q_lora;
      }
      ops.matmul("q_proj.wgrad", pass, d.h, q_out, d.tokens);
      return o_in * d.h + d.kv_lora * kv_up_out + d.h * kv_down_out + d.h * q_out;
  }
  return 0;
}

}  // namespace

LayerSetup layer_setup(const ModelSpec& model, double micro_batch, int tp, bool sequence_parallel, int ep,
                       bool eager_pytorch, MoeDispatcher moe_dispatcher, int expert_tp) {
  return {.micro_batch = micro_batch,
          .tp = tp,
          .sequence_parallel = sequence_parallel,
          .flash_attention = model.flash_attention,
          .dropout = !model.swiglu,
          .ep = ep,
          .expert_tp = expert_tp,
          .moe_dispatcher = moe_dispatcher,
          .eager_pytorch = eager_pytorch};
}

std::vector<TransformerOp> layer_ops(const ModelSpec& model, const LayerSetup& setup) {
  return layer_ops(model, setup, false);
}

std::vector<TransformerOp> moe_layer_ops(const ModelSpec& model, const LayerSetup& setup) {
  return layer_ops(model, setup, true);
}

std::vector<TransformerOp> layer_ops(const ModelSpec& model, const LayerSetup& setup, bool moe) {
  const Dims d = dims_of(model, setup);
  const bool gated = model.swiglu;
  const bool rope = !model.learned_positions;
  const double up_out = gated ? 2 * d.ffn : d.ffn;  // gate and up projections in one GEMM
  // Bias + dropout + residual (Megatron's fused bias_dropout_add): read the
  // branch and the residual, write the sum and a 1-byte mask; without dropout
  // a plain residual add.
  const double residual_bytes = setup.dropout ? 2 + 2 + 2 + 1 : 2 + 2 + 2;
  const auto F = OpPass::forward;
  const auto B = OpPass::backward_input;
  const auto W = OpPass::backward_weight;
  OpList ops;

  const bool eager = setup.eager_pytorch;
  const Eager e = eager_kernels(gated);
  const double rope_elements = d.tokens * (d.heads + d.kv_heads) * d.head_dim;
  const bool mla = model.is_mla();

  // Forward.
  if (eager)
    ops.elementwise("norm1", F, d.tokens_norm * d.h, e.norm_bytes, e.norm_kernels);
  else
    ops.elementwise("norm1", F, d.tokens_norm * d.h, 2 + 2);
  if (mla) {
    mla_attention(ops, d, setup, e, F);
  } else {
    ops.matmul("qkv", F, d.tokens, d.qkv_out, d.h);
    if (model.qk_norm)  // RMSNorm over each head's query and key (Qwen3)
      ops.elementwise("qk_norm", F, rope_elements, 2 + 2);
    if (rope && eager)
      ops.elementwise("rope", F, rope_elements, e.rope_bytes, 2 * e.rope_kernels);
    else if (rope)
      ops.elementwise("rope", F, rope_elements, 2 + 2, 2);
    attention_core(ops, d, setup, F);
    if (eager)  // the attention output back to [tokens, heads x head_dim]: .transpose().contiguous()
      ops.elementwise("attention_out_copy", F, d.tokens * d.heads * d.head_dim, 2 + 2);
    ops.matmul("proj", F, d.tokens, d.h, d.heads * d.head_dim);
  }
  ops.elementwise("residual1", F, d.tokens_norm * d.h, residual_bytes);
  if (eager)
    ops.elementwise("norm2", F, d.tokens_norm * d.h, e.norm_bytes, e.norm_kernels);
  else
    ops.elementwise("norm2", F, d.tokens_norm * d.h, 2 + 2);
  if (moe) {
    moe_mlp(ops, model, setup, d, F);
  } else {
    ops.matmul("mlp_up", F, d.tokens, up_out, d.h);
    if (gated && eager)
      ops.elementwise("swiglu", F, d.tokens * d.ffn, e.swiglu_bytes, e.swiglu_kernels);
    else if (gated)
      ops.elementwise("swiglu", F, d.tokens * d.ffn, 2 + 2 + 2);  // silu(gate) * up
    else
      ops.elementwise("gelu", F, d.tokens * d.ffn, 2 + 2);  // fused bias + GeLU
    ops.matmul("mlp_down", F, d.tokens, d.h, d.ffn);
  }
  ops.elementwise("residual2", F, d.tokens_norm * d.h, residual_bytes);

  // Backward, input gradients (B), in reverse order. A residual's backward
  // is a copy unless dropout needs its mask; each norm's backward also sums
  // the gradients of the residual fork (read x and dy, write dx, then add).
  if (setup.dropout)
    ops.elementwise("residual2.bwd", B, d.tokens_norm * d.h, 2 + 1 + 2);
  if (moe) {
    moe_mlp(ops, model, setup, d, B);
  } else {
    ops.matmul("mlp_down.dgrad", B, d.tokens, d.ffn, d.h);
    if (gated && eager)
      ops.elementwise("swiglu.bwd", B, d.tokens * d.ffn, e.swiglu_bwd_bytes, e.swiglu_bwd_kernels);
    else if (gated)
      ops.elementwise("swiglu.bwd", B, d.tokens * d.ffn, 2 + 2 + 2 + 2 + 2);
    else
      ops.elementwise("gelu.bwd", B, d.tokens * d.ffn, 2 + 2 + 2);
    ops.matmul("mlp_up.dgrad", B, d.tokens, d.h, up_out);
  }
  if (eager)
    ops.elementwise("norm2.bwd", B, d.tokens_norm * d.h, e.norm_bwd_bytes, e.norm_bwd_kernels);
  else
    ops.elementwise("norm2.bwd", B, d.tokens_norm * d.h, 2 + 2 + 2 + 2 + 2, 2);
  if (setup.dropout)
    ops.elementwise("residual1.bwd", B, d.tokens_norm * d.h, 2 + 1 + 2);
  if (mla) {
    mla_attention(ops, d, setup, e, B);
  } else {
    ops.matmul("proj.dgrad", B, d.tokens, d.heads * d.head_dim, d.h);
    if (eager)
      ops.elementwise("attention_out_copy.bwd", B, d.tokens * d.heads * d.head_dim, 2 + 2);
    attention_core(ops, d, setup, B);
    if (rope && eager)
      ops.elementwise("rope.bwd", B, rope_elements, e.rope_bwd_bytes, 2 * e.rope_bwd_kernels);
    else if (rope)
      ops.elementwise("rope.bwd", B, rope_elements, 2 + 2, 2);
    if (model.qk_norm)
      ops.elementwise("qk_norm.bwd", B, rope_elements, 2 + 2 + 2 + 2 + 2, 2);
    ops.matmul("qkv.dgrad", B, d.tokens, d.h, d.qkv_out);
  }
  if (eager)
    ops.elementwise("norm1.bwd", B, d.tokens_norm * d.h, e.norm_bwd_bytes, e.norm_bwd_kernels);
  else
    ops.elementwise("norm1.bwd", B, d.tokens_norm * d.h, 2 + 2 + 2 + 2 + 2, 2);

  // Backward, weight gradients (W): one GEMM per weight matrix contracting
  // over the tokens, the bias gradients (a reduction of dy per biased GEMM),
  // and the accumulation of this micro-batch's gradients into the 16-bit
  // .grad buffers (read both, write one).
  double mlp_weights = d.h * up_out + d.ffn * d.h;
  if (moe) {
    mlp_weights = moe_mlp(ops, model, setup, d, W);
  } else {
    ops.matmul("mlp_down.wgrad", W, d.ffn, d.h, d.tokens);
    ops.matmul("mlp_up.wgrad", W, d.h, up_out, d.tokens);
  }
  double attention_weights = 0;
  if (mla) {
    attention_weights = mla_attention(ops, d, setup, e, W);
    if (!gated)  // MLA has no biases: the MLP's and the residual's only
      ops.elementwise("bias.wgrad", W, d.tokens * ((moe ? 0.0 : d.ffn) + d.h), 2, 2);
  } else {
    ops.matmul("proj.wgrad", W, d.heads * d.head_dim, d.h, d.tokens);
    ops.matmul("qkv.wgrad", W, d.h, d.qkv_out, d.tokens);
    if (!gated)
      ops.elementwise("bias.wgrad", W, d.tokens * (d.qkv_out + d.h + (moe ? 0.0 : d.ffn) + d.h), 2, 4);
    attention_weights = d.h * d.qkv_out + d.heads * d.head_dim * d.h;
  }
  const double weights = attention_weights + mlp_weights;
  if (!eager)  // FSDP reduce-scatters each backward's fresh gradients: nothing to accumulate
    ops.elementwise("grad_accumulate", W, weights, 2 + 2 + 2, 4);
  return ops.take();
}

std::vector<TransformerOp> embedding_ops(const ModelSpec& model, const LayerSetup& setup) {
  const Dims d = dims_of(model, setup);
  OpList ops;
  // Gather rows of the vocabulary shard (read, write); GPT adds learned
  // positions (gather, then read both and write the sum).
  ops.elementwise("embedding", OpPass::forward, d.tokens * d.h,
                  model.learned_positions ? 2 + 2 + 2 + 2 + 2 + 2 + 2 : 2 + 2,
                  model.learned_positions ? 3 : 1);
  if (setup.dropout)
    ops.elementwise("embedding_dropout", OpPass::forward, d.tokens * d.h, 2 + 2 + 1);
  // The table gradient: zero the shard's 16-bit gradient, then scatter-add
  // every token's gradient into it (read dy, fp32 atomic add). All of it is
  // weight gradient: the embedding has no input to pass a gradient to.
  if (setup.dropout)
    ops.elementwise("embedding_dropout.bwd", OpPass::backward_weight, d.tokens * d.h, 2 + 1 + 2);
  const double table = d.vocab * d.h + (model.learned_positions ? d.s * d.h : 0.0);
  ops.elementwise("embedding.wgrad", OpPass::backward_weight, 1, 2 * 2 * table + 6 * d.tokens * d.h,
                  model.learned_positions ? 4 : 2);
  return ops.take();
}

std::vector<TransformerOp> logits_ops(const ModelSpec& model, const LayerSetup& setup) {
  const Dims d = dims_of(model, setup);
  const double logits = d.tokens * d.vocab;
  OpList ops;
  ops.elementwise("final_norm", OpPass::forward, d.tokens_norm * d.h, 2 + 2);
  ops.matmul("logits", OpPass::forward, d.tokens, d.vocab, d.h);
  // Vocabulary-parallel cross-entropy on fp32 logits: cast (2 + 4), max (4),
  // subtract in place (4 + 4), exp (4 + 4), sum (4), normalise and keep the
  // softmax for the backward (4 + 4).
  ops.elementwise("cross_entropy", OpPass::forward, logits, 38, 6);
  // Backward: scale the kept softmax by the loss gradient (4 + 4), cast back
  // to 16 bits (4 + 2).
  ops.elementwise("cross_entropy.bwd", OpPass::backward_input, logits, 14, 2);
  ops.matmul("logits.dgrad", OpPass::backward_input, d.tokens, d.h, d.vocab);
  ops.elementwise("final_norm.bwd", OpPass::backward_input, d.tokens_norm * d.h, 2 + 2 + 2);
  ops.matmul("logits.wgrad", OpPass::backward_weight, d.h, d.vocab, d.tokens);
  ops.elementwise("grad_accumulate", OpPass::backward_weight, d.h * d.vocab, 2 + 2 + 2);
  return ops.take();
}

std::vector<TransformerOp> mtp_ops(const ModelSpec& model, const LayerSetup& setup) {
  const Dims d = dims_of(model, setup);
  const double proj_out = d.h / setup.tp;  // eh_proj's output columns on this rank
  OpList ops;
  ops.elementwise("mtp_norms", OpPass::forward, 2 * d.tokens_norm * d.h, 2 + 2, 2);
  ops.elementwise("mtp_concat", OpPass::forward, 2 * d.tokens_norm * d.h, 2 + 2);
  ops.matmul("mtp_proj", OpPass::forward, d.tokens, proj_out, 2 * d.h);
  ops.matmul("mtp_proj.dgrad", OpPass::backward_input, d.tokens, 2 * d.h, proj_out);
  ops.elementwise("mtp_norms.bwd", OpPass::backward_input, 2 * d.tokens_norm * d.h, 2 + 2 + 2 + 2 + 2, 4);
  ops.matmul("mtp_proj.wgrad", OpPass::backward_weight, 2 * d.h, proj_out, d.tokens);
  ops.elementwise("grad_accumulate", OpPass::backward_weight, 2 * d.h * proj_out, 2 + 2 + 2);
  return ops.take();
}

}  // namespace trainsim::workloads
