// The op list of a layer against the analytic FLOP counts of
// ../shared/reference/cost-models.md and the activation sizes of Korthikanti
// et al.
#include "workloads/transformer_ops.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace trainsim::workloads {
namespace {

ModelSpec gpt_22b() {
  auto m = *find_model_preset("gpt3-1.3b");
  m.layers = 48;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn_hidden = 4 * 6144;
  return m;
}

double sum(const std::vector<TransformerOp>& ops, const std::function<bool(const TransformerOp&)>& pick,
           double TransformerOp::*field) {
  double total = 0;
  for (const auto& op : ops)
    if (pick(op))
      total += op.*field;
  return total;
}

bool forward(const TransformerOp& op) {
  return op.pass == OpPass::forward;
}
bool backward(const TransformerOp& op) {
  return op.pass != OpPass::forward;
}

TEST(TransformerOps, GptLayerForwardFlopsPerRankAreTheAnalyticCountOverTp) {
  const auto m = gpt_22b();
  for (int tp : {1, 2, 8}) {
    SCOPED_TRACE(tp);
    const auto ops = layer_ops(m, layer_setup(m, 4, tp));
    // 24 b s h^2 + 4 b s^2 h, split over the TP group.
    EXPECT_NEAR(sum(ops, forward, &TransformerOp::flops) / (m.layer_forward_flops(4) / tp), 1.0, 1e-12);
    // Backward: an input-gradient and a weight-gradient matmul per weight,
    // two products per attention matmul: twice the forward.
    EXPECT_NEAR(sum(ops, backward, &TransformerOp::flops) / (2 * m.layer_forward_flops(4) / tp), 1.0, 1e-12);
  }
}

TEST(TransformerOps, LlamaLayerHasGroupedQueryProjectionsAndAGatedMlp) {
  auto m = *find_model_preset("llama2-70b");  // 64 heads, 8 key/value heads, f = 28672
  m.flash_attention = false;                  // count every attention FLOP (a causal flash kernel skips half)
  const auto ops = layer_ops(m, layer_setup(m, 1, 8));
  const double d = 128;
  bool found_qkv = false, found_up = false, found_swiglu = false;
  for (const auto& op : ops) {
    if (op.name == "qkv") {
      found_qkv = true;
      EXPECT_DOUBLE_EQ(op.n, (64 / 8 + 2 * 1) * d);
      EXPECT_DOUBLE_EQ(op.k, 8192);
    }
    if (op.name == "mlp_up") {
      found_up = true;
      EXPECT_DOUBLE_EQ(op.n, 2 * 28672 / 8);
    }
    found_swiglu = found_swiglu || op.name == "swiglu";
    EXPECT_EQ(op.name.find("dropout"), std::string::npos) << op.name;  // Llama trains without dropout
  }
  EXPECT_TRUE(found_qkv && found_up && found_swiglu);
  EXPECT_NEAR(sum(ops, forward, &TransformerOp::flops) / (m.layer_forward_flops(1) / 8), 1.0, 1e-12);
}

TEST(TransformerOps, UnfusedAttentionMovesTheScoreMatricesFlashDoesNot) {
  auto m = gpt_22b();
  const auto unfused = layer_ops(m, layer_setup(m, 4, 8));
  // Softmax reads and writes the b a s^2 / t fp16 scores (Korthikanti: the
  // 5 a s^2 b term of the activations comes from these matrices).
  const double scores = 4.0 * (64 / 8) * 2048 * 2048;
  for (const auto& op : unfused) {
    if (op.name == "softmax") {
      EXPECT_DOUBLE_EQ(op.bytes, 4 * scores);
    }
  }
  m.flash_attention = true;
  const auto flash = layer_ops(m, layer_setup(m, 4, 8));
  double core_bytes = 0, core_flops_fwd = 0, core_flops_bwd = 0;
  for (const auto& op : flash) {
    if (!op.attention_core)
      continue;
    EXPECT_EQ(op.kind, OpKind::attention);
    core_bytes += op.bytes;
    (op.pass == OpPass::forward ? core_flops_fwd : core_flops_bwd) += op.flops;
  }
  double unfused_core_bytes = 0;
  for (const auto& op : unfused)
    unfused_core_bytes += op.attention_core ? op.bytes : 0.0;
  EXPECT_LT(core_bytes, 0.1 * unfused_core_bytes);
  // Causal: half of 4 b s^2 h / t forward; the backward's five products
  // (it recomputes the scores) are 2.5 times that.
  EXPECT_DOUBLE_EQ(core_flops_fwd, 0.5 * m.attention_core_forward_flops(4) / 8);
  EXPECT_DOUBLE_EQ(core_flops_bwd, 2.5 * core_flops_fwd);
}

TEST(TransformerOps, SequenceParallelSplitsNormsAndResidualsOverTheTpGroup) {
  const auto m = gpt_22b();
  const auto plain = layer_ops(m, layer_setup(m, 4, 8, false));
  const auto sp = layer_ops(m, layer_setup(m, 4, 8, true));
  ASSERT_EQ(plain.size(), sp.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    SCOPED_TRACE(plain[i].name);
    const bool split = plain[i].name.rfind("norm", 0) == 0 || plain[i].name.rfind("residual", 0) == 0;
    EXPECT_DOUBLE_EQ(sp[i].bytes, split ? plain[i].bytes / 8 : plain[i].bytes);
    EXPECT_DOUBLE_EQ(sp[i].flops, plain[i].flops);
  }
}

TEST(TransformerOps, LogitsAndEmbeddingSplitTheVocabularyOverTp) {
  const auto m = gpt_22b();
  const auto logits = logits_ops(m, layer_setup(m, 2, 4));
  double fwd = 0;
  for (const auto& op : logits)
    if (op.pass == OpPass::forward)
      fwd += op.flops;
  EXPECT_NEAR(fwd / (m.logits_forward_flops(2) / 4), 1.0, 1e-12);
  for (const auto& op : embedding_ops(m, layer_setup(m, 2, 4))) {
    EXPECT_EQ(op.kind, OpKind::elementwise);
    EXPECT_NE(op.pass, OpPass::backward_input) << op.name;  // the embedding has no input gradient
  }
}

}  // namespace
}  // namespace trainsim::workloads
