// The activation formulas of ../shared/reference/cost-models.md (Korthikanti
// et al., MLSys 2023), row by row, for a GPT layer; what FlashAttention and
// context parallelism change; and the general (GQA, SwiGLU) layer.
#include <gtest/gtest.h>

#include "workloads/activation_memory.hpp"

namespace trainsim::workloads {
namespace {

// GPT-3 175B's layer: s 2048, h 12288, a 96; micro-batch 1.
ModelSpec gpt3_175b() {
  return *find_model_preset("gpt3-175b");
}

ParallelPlan plan_with(int tp, Recompute recompute, bool sp = false, int cp = 1) {
  ParallelPlan p{.tp = tp, .micro_batch_size = 1};
  p.recompute = recompute;
  p.sequence_parallel = sp;
  p.cp = cp;
  return p;
}

constexpr double s = 2048, b = 1, h = 12288, a = 96;
constexpr double sbh = s * b * h;

TEST(ActivationMemory, NoParallelismIsSbhTimes34Plus5AsOverH) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(1, Recompute::none)),
                   sbh * (34 + 5 * a * s / h));
}

TEST(ActivationMemory, TensorParallelOnlyKeeps10SbhUnsplit) {
  for (int t : {2, 4, 8})
    EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(t, Recompute::none)),
                     sbh * (10 + 24.0 / t + 5 * a * s / (h * t)))
        << t;
}

TEST(ActivationMemory, TensorPlusSequenceParallelSplitsEverything) {
  for (int t : {2, 4, 8})
    EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(t, Recompute::none, true)),
                     sbh * (34 + 5 * a * s / h) / t)
        << t;
}

TEST(ActivationMemory, SelectiveRecomputationOrFlashAttentionDropsTheScores) {
  const int t = 8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(t, Recompute::selective, true)),
                   34 * sbh / t);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(t, Recompute::selective)),
                   sbh * (10 + 24.0 / t));
  auto flash = gpt3_175b();
  flash.flash_attention = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(flash, plan_with(t, Recompute::none, true)), 34 * sbh / t);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(flash, plan_with(t, Recompute::none)), sbh * (10 + 24.0 / t));
}

TEST(ActivationMemory, FullRecomputationKeepsOnlyTheLayerInput) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(8, Recompute::full)), 2 * sbh);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(8, Recompute::full, true)), 2 * sbh / 8);
}

// The paper's headline: for GPT-3 175B at t = 8, TP + SP + selective keeps
// 34 s b h / t = 4.25 s b h, 5.4x less than TP alone (10 + 24/t + 5as/(ht)
// = 10 + 3 + 10 = 23 s b h).
TEST(ActivationMemory, SequenceParallelWithSelectiveIsFiveTimesLessThanTensorParallelAlone) {
  const double tp_only = layer_activation_bytes(gpt3_175b(), plan_with(8, Recompute::none));
  const double sp_selective = layer_activation_bytes(gpt3_175b(), plan_with(8, Recompute::selective, true));
  EXPECT_NEAR(tp_only / sp_selective, 23.0 / 4.25, 1e-12);
}

TEST(ActivationMemory, ContextParallelDividesEveryTermByItsDegree) {
  for (auto r : {Recompute::none, Recompute::selective, Recompute::full})
    for (bool sp : {false, true})
      EXPECT_DOUBLE_EQ(layer_activation_bytes(gpt3_175b(), plan_with(8, r, sp, 4)),
                       layer_activation_bytes(gpt3_175b(), plan_with(8, r, sp)) / 4);
}

TEST(ActivationMemory, StageHoldsItsLayersWorth) {
  EXPECT_DOUBLE_EQ(stage_activation_bytes(gpt3_175b(), plan_with(8, Recompute::none), 12),
                   12 * layer_activation_bytes(gpt3_175b(), plan_with(8, Recompute::none)));
}

// Llama 2 70B: h 8192, 64 heads, 8 key/value heads, SwiGLU with f = 28672.
// Split part per token: Q and attention output 4h, K and V 4 h_kv = 0.5h,
// SwiGLU gate, up, product 6f = 21h: 25.5h.
TEST(ActivationMemory, GroupedQueryAttentionAndSwiGluGetTheirOwnTensors) {
  const auto llama = *find_model_preset("llama2-70b");
  const double lsbh = 4096.0 * 1 * 8192;
  const double split = 4 + 4 * 8.0 / 64 + 6 * 28672.0 / 8192;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(llama, plan_with(8, Recompute::selective)),
                   lsbh * (10 + split / 8));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(llama, plan_with(8, Recompute::selective, true)),
                   lsbh * (10 + split) / 8);
}

// zbv.py's memory model: W frees 32h per token of the F's 34h + 5as.
TEST(ActivationMemory, WeightGradientHoldsTheMatmulInputsAndOutputGradients) {
  EXPECT_DOUBLE_EQ(layer_weight_gradient_hold_bytes(gpt3_175b(), plan_with(1, Recompute::none)), 32 * sbh);
  EXPECT_DOUBLE_EQ(layer_weight_gradient_hold_bytes(gpt3_175b(), plan_with(8, Recompute::none)),
                   sbh * (8 + 3));
  EXPECT_DOUBLE_EQ(layer_weight_gradient_hold_bytes(gpt3_175b(), plan_with(8, Recompute::none, true)),
                   32 * sbh / 8);
  // Never more than the forward stored (without full recomputation).
  for (int t : {1, 2, 8})
    for (auto r : {Recompute::none, Recompute::selective})
      EXPECT_LT(layer_weight_gradient_hold_bytes(gpt3_175b(), plan_with(t, r)),
                layer_activation_bytes(gpt3_175b(), plan_with(t, r)));
}

TEST(ActivationMemory, EmbeddingAndLogitsExtras) {
  const auto model = gpt3_175b();
  const double V = model.vocab;
  EXPECT_DOUBLE_EQ(embedding_activation_bytes(model, plan_with(8, Recompute::none)), sbh);
  EXPECT_DOUBLE_EQ(embedding_activation_bytes(model, plan_with(8, Recompute::none, true)), sbh / 8);
  EXPECT_DOUBLE_EQ(logits_activation_bytes(model, plan_with(8, Recompute::none)),
                   4 * sbh + 4 * s * b * V / 8);
  EXPECT_DOUBLE_EQ(logits_weight_gradient_hold_bytes(model, plan_with(8, Recompute::none)),
                   2 * sbh + 2 * s * b * V / 8);
}

TEST(ActivationMemory, RecomputationWorkspaceIsOneLayerRebuilt) {
  const auto model = gpt3_175b();
  EXPECT_EQ(recompute_workspace_bytes(model, plan_with(8, Recompute::none)), 0);
  EXPECT_DOUBLE_EQ(recompute_workspace_bytes(model, plan_with(8, Recompute::full)),
                   layer_activation_bytes(model, plan_with(8, Recompute::none)));
  EXPECT_DOUBLE_EQ(recompute_workspace_bytes(model, plan_with(8, Recompute::selective)),
                   sbh * 5 * a * s / (h * 8));
  auto flash = model;
  flash.flash_attention = true;
  EXPECT_EQ(recompute_workspace_bytes(flash, plan_with(8, Recompute::selective)), 0);
}

}  // namespace
}  // namespace trainsim::workloads
