#include "workloads/transformer_ops.hpp"

#include <algorithm>

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
  void batched_matmul(std::string name, OpPass pass, double batch, double m, double n, double k) {
    add({.name = std::move(name),
         .kind = OpKind::batched_matmul,
         .pass = pass,
         .attention_core = true,
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
};

Dims dims_of(const ModelSpec& model, const LayerSetup& setup) {
  Dims d{};
  const double t = setup.tp;
  d.b = setup.micro_batch;
  d.s = model.seq_len;
  d.h = model.hidden;
  d.tokens = d.b * d.s;
  d.tokens_norm = setup.sequence_parallel ? d.tokens / t : d.tokens;
  d.head_dim = double(model.hidden) / model.heads;
  d.heads = model.heads / t;
  // Megatron keeps at least one key/value head per rank (replicated when
  // kv_heads < t).
  d.kv_heads = std::max(1.0, model.kv_heads / t);
  d.ffn = model.ffn_hidden / t;
  d.qkv_out = (d.heads + 2 * d.kv_heads) * d.head_dim;
  d.vocab = model.vocab / t;
  return d;
}

void attention_core(OpList& ops, const Dims& d, const LayerSetup& setup, OpPass pass) {
  const double batch = d.b * d.heads;
  const double scores = batch * d.s * d.s;  // elements of the s x s score matrices
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
  if (pass == OpPass::forward) {
    ops.batched_matmul("scores", pass, batch, d.s, d.s, d.head_dim);  // Q K^T
    // Fused scale + causal mask + softmax, in place.
    ops.elementwise("softmax", pass, scores, 2 + 2, 1, true);
    if (setup.dropout)
      ops.elementwise("attention_dropout", pass, scores, 2 + 2 + 1, 1, true);
    ops.batched_matmul("context", pass, batch, d.s, d.head_dim, d.s);  // P V
    return;
  }
  ops.batched_matmul("context.dgrad_probs", pass, batch, d.s, d.s, d.head_dim);   // dP = dO V^T
  ops.batched_matmul("context.dgrad_values", pass, batch, d.s, d.head_dim, d.s);  // dV = P^T dO
  if (setup.dropout)
    ops.elementwise("attention_dropout.bwd", pass, scores, 2 + 1 + 2, 1, true);
  ops.elementwise("softmax.bwd", pass, scores, 2 + 2 + 2, 1, true);
  ops.batched_matmul("scores.dgrad_query", pass, batch, d.s, d.head_dim, d.s);  // dQ = dS K
  ops.batched_matmul("scores.dgrad_key", pass, batch, d.s, d.head_dim, d.s);    // dK = dS^T Q
}

}  // namespace

LayerSetup layer_setup(const ModelSpec& model, double micro_batch, int tp, bool sequence_parallel) {
  return {.micro_batch = micro_batch,
          .tp = tp,
          .sequence_parallel = sequence_parallel,
          .flash_attention = model.flash_attention,
          .dropout = !model.swiglu};
}

std::vector<TransformerOp> layer_ops(const ModelSpec& model, const LayerSetup& setup) {
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

  // Forward.
  ops.elementwise("norm1", F, d.tokens_norm * d.h, 2 + 2);
  ops.matmul("qkv", F, d.tokens, d.qkv_out, d.h);
  if (rope)
    ops.elementwise("rope", F, d.tokens * (d.heads + d.kv_heads) * d.head_dim, 2 + 2, 2);
  attention_core(ops, d, setup, F);
  ops.matmul("proj", F, d.tokens, d.h, d.heads * d.head_dim);
  ops.elementwise("residual1", F, d.tokens_norm * d.h, residual_bytes);
  ops.elementwise("norm2", F, d.tokens_norm * d.h, 2 + 2);
  ops.matmul("mlp_up", F, d.tokens, up_out, d.h);
  if (gated)
    ops.elementwise("swiglu", F, d.tokens * d.ffn, 2 + 2 + 2);  // silu(gate) * up
  else
    ops.elementwise("gelu", F, d.tokens * d.ffn, 2 + 2);  // fused bias + GeLU
  ops.matmul("mlp_down", F, d.tokens, d.h, d.ffn);
  ops.elementwise("residual2", F, d.tokens_norm * d.h, residual_bytes);

  // Backward, input gradients (B), in reverse order. A residual's backward
  // is a copy unless dropout needs its mask; each norm's backward also sums
  // the gradients of the residual fork (read x and dy, write dx, then add).
  if (setup.dropout)
    ops.elementwise("residual2.bwd", B, d.tokens_norm * d.h, 2 + 1 + 2);
  ops.matmul("mlp_down.dgrad", B, d.tokens, d.ffn, d.h);
  if (gated)
    ops.elementwise("swiglu.bwd", B, d.tokens * d.ffn, 2 + 2 + 2 + 2 + 2);
  else
    ops.elementwise("gelu.bwd", B, d.tokens * d.ffn, 2 + 2 + 2);
  ops.matmul("mlp_up.dgrad", B, d.tokens, d.h, up_out);
  ops.elementwise("norm2.bwd", B, d.tokens_norm * d.h, 2 + 2 + 2 + 2 + 2, 2);
  if (setup.dropout)
    ops.elementwise("residual1.bwd", B, d.tokens_norm * d.h, 2 + 1 + 2);
  ops.matmul("proj.dgrad", B, d.tokens, d.heads * d.head_dim, d.h);
  attention_core(ops, d, setup, B);
  if (rope)
    ops.elementwise("rope.bwd", B, d.tokens * (d.heads + d.kv_heads) * d.head_dim, 2 + 2, 2);
  ops.matmul("qkv.dgrad", B, d.tokens, d.h, d.qkv_out);
  ops.elementwise("norm1.bwd", B, d.tokens_norm * d.h, 2 + 2 + 2 + 2 + 2, 2);

  // Backward, weight gradients (W): one GEMM per weight matrix contracting
  // over the tokens, the bias gradients (a reduction of dy per biased GEMM),
  // and the accumulation of this micro-batch's gradients into the 16-bit
  // .grad buffers (read both, write one).
  ops.matmul("mlp_down.wgrad", W, d.ffn, d.h, d.tokens);
  ops.matmul("mlp_up.wgrad", W, d.h, up_out, d.tokens);
  ops.matmul("proj.wgrad", W, d.heads * d.head_dim, d.h, d.tokens);
  ops.matmul("qkv.wgrad", W, d.h, d.qkv_out, d.tokens);
  if (!gated)
    ops.elementwise("bias.wgrad", W, d.tokens * (d.qkv_out + d.h + d.ffn + d.h), 2, 4);
  const double weights = d.h * d.qkv_out + d.heads * d.head_dim * d.h + d.h * up_out + d.ffn * d.h;
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

}  // namespace trainsim::workloads
