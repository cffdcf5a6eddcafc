// Multi-head latent attention (workloads/mla_attention.hpp) against closed
// forms counted by hand from DeepSeek-V3's config (inference/configs/
// config_671B.json: h 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512,
// head dims 128 + 64 and 128) and against Megatron-core's FLOP formula
// (megatron/training/training.py, num_floating_point_operations, MLA
// branch).
#include <gtest/gtest.h>

#include <functional>

#include "workloads/activation_memory.hpp"
#include "workloads/attention.hpp"
#include "workloads/mla_attention.hpp"
#include "workloads/precision.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec v3() {
  return *find_model_preset("deepseek-v3");
}

// The MLA GEMM weights of one DeepSeek-V3 layer, counted by hand:
//   q_down  7168 x 1536            =  11,010,048
//   q_up    1536 x 128 x 192       =  37,748,736
//   kv_down 7168 x (512 + 64)      =   4,128,768
//   kv_up   512 x 128 x (128+128)  =  16,777,216
//   proj    128 x 128 x 7168       = 117,440,512
constexpr double kV3MlaGemmWeights = 11010048.0 + 37748736 + 4128768 + 16777216 + 117440512;

TEST(MlaAttention, DeepSeekV3LayerWeightsAreTheFiveProjectionsAndTwoLatentNorms) {
  EXPECT_DOUBLE_EQ(kV3MlaGemmWeights, 187105280.0);
  EXPECT_DOUBLE_EQ(mla_matmul_parameters(v3()), kV3MlaGemmWeights);
  EXPECT_DOUBLE_EQ(mla_parameters(v3()), kV3MlaGemmWeights + 1536 + 512);
  EXPECT_DOUBLE_EQ(traits_of(AttentionKind::mla).parameters(v3()), mla_parameters(v3()));
}

TEST(MlaAttention, ForwardFlopsPerTokenAreTwiceTheWeightsPlusTheCoreOverDqkAndDv) {
  const ModelSpec m = v3();
  const double s = 4096;
  // Per token: 2 x 187,105,280 in the projections; the core 2 s n (d_qk +
  // d_v) = 2 x 4096 x 128 x (192 + 128) = 335,544,320 (full, no causal
  // halving, as trainsim counts attention).
  const double core_per_token = 2 * s * 128 * (192 + 128);
  EXPECT_DOUBLE_EQ(core_per_token, 335544320.0);
  EXPECT_DOUBLE_EQ(m.attention_core_forward_flops(1), s * core_per_token);
  // Layer 0 is dense (ffn 18432, SwiGLU): 3 x 7168 x 18432 MLP weights.
  const double mlp = 3.0 * 7168 * 18432;
  EXPECT_DOUBLE_EQ(m.layer_forward_flops(1, 0), s * (2 * (kV3MlaGemmWeights + mlp) + core_per_token));
}

TEST(MlaAttention, FlopsEqualMegatronsFormulaLessItsNormTerms) {
  // Megatron counts, per token and layer, 3 x 2 x (q_lora (h + n d_qk + 1) +
  // kv_lora (h + n (d_nope + d_v) + 1) + h d_rope + n d_v h) for the
  // projections: the "+ 1"s are the latent norms, which trainsim leaves to
  // the element-wise kernels.
  for (const char* name : {"deepseek-v3", "deepseek-v2-lite"}) {
    const ModelSpec m = *find_model_preset(name);
    const auto& a = m.mla;
    const double h = m.hidden, n = m.heads;
    const double q_term =
        a.q_lora_rank == 0 ? h * n * a.qk_head_dim() : a.q_lora_rank * (h + n * a.qk_head_dim() + 1.0);
    const double megatron =
        2 * (q_term + a.kv_lora_rank * (h + n * (a.qk_nope_head_dim + a.v_head_dim) + 1.0) +
             h * a.qk_rope_head_dim + n * a.v_head_dim * h);
    const double norms = 2.0 * (a.q_lora_rank + a.kv_lora_rank);
    EXPECT_DOUBLE_EQ(2 * mla_matmul_parameters(m), megatron - norms) << name;
  }
}

TEST(MlaAttention, WithoutQueryCompressionTheQueryIsOneProjection) {
  const ModelSpec lite = *find_model_preset("deepseek-v2-lite");
  EXPECT_EQ(lite.mla.q_lora_rank, 0);
  // q_proj 2048 x 16 x 192, kv_down 2048 x 576, kv_up 512 x 16 x 256, proj 16 x 128 x 2048.
  EXPECT_DOUBLE_EQ(mla_matmul_parameters(lite),
                   2048.0 * 16 * 192 + 2048.0 * 576 + 512.0 * 16 * 256 + 16.0 * 128 * 2048);
}

double sum_flops(const std::vector<TransformerOp>& ops,
                 const std::function<bool(const TransformerOp&)>& pick) {
  double total = 0;
  for (const auto& op : ops)
    if (pick(op))
      total += op.flops;
  return total;
}

bool is_projection(const TransformerOp& op) {
  for (const char* base : {"q_down", "q_up", "q_proj", "kv_down", "kv_up", "proj"})
    if (op.name == base)
      return true;
  return false;
}

TEST(MlaAttention, KernelsOfOneGpuSplitTheUpAndOutputProjectionsOverTp) {
  const ModelSpec m = v3();
  const double tokens = 4096;
  const auto ops1 = layer_ops(m, layer_setup(m, 1, 1));
  EXPECT_DOUBLE_EQ(sum_flops(ops1, is_projection), 2 * tokens * kV3MlaGemmWeights);
  // TP 4 with sequence parallelism: the duplicated down projections run on
  // each rank's s / 4 tokens, the head-split GEMMs on a quarter of the heads.
  const auto ops4 = layer_ops(m, layer_setup(m, 1, 4, true));
  EXPECT_DOUBLE_EQ(sum_flops(ops4, is_projection), 2 * tokens * kV3MlaGemmWeights / 4);
  // Without it, every rank projects every token down (duplicated work).
  const auto dup = layer_ops(m, layer_setup(m, 1, 4, false));
  const double down = 2 * tokens * (7168.0 * 1536 + 7168.0 * 576);
  EXPECT_DOUBLE_EQ(sum_flops(dup, is_projection), 2 * tokens * kV3MlaGemmWeights / 4 + down * 3 / 4);
  // The FlashAttention kernel runs half the core under the causal mask.
  EXPECT_DOUBLE_EQ(sum_flops(ops1, [](const TransformerOp& op) { return op.name == "flash_attention"; }),
                   0.5 * m.attention_core_forward_flops(1));
  // Weight gradients: one GEMM per projection, as many FLOPs as the forward.
  EXPECT_DOUBLE_EQ(sum_flops(ops1,
                             [](const TransformerOp& op) {
                               return op.pass == OpPass::backward_weight && op.k > 0 &&
                                      op.name.find("experts") == std::string::npos &&
                                      op.name.find("mlp") == std::string::npos;
                             }),
                   2 * tokens * kV3MlaGemmWeights);
}

TEST(MlaAttention, Fp8RunsEveryProjectionInFp8AndFusesTheLatentNormsCasts) {
  const ModelSpec m = v3();
  ParallelPlan plan{.tp = 1, .micro_batch_size = 1};
  plan.precision = Precision::fp8;
  const auto ops = with_precision(layer_ops(m, layer_setup(m, 1, 1)), plan);
  int fp8_projections = 0;
  bool q_up_cast = false, q_down_cast = false;
  for (const auto& op : ops) {
    if (is_projection(op) && op.fp8)
      ++fp8_projections;
    q_up_cast = q_up_cast || op.name == "q_up.quantize";
    q_down_cast = q_down_cast || op.name == "q_down.quantize";
    if (op.attention_core) {
      EXPECT_FALSE(op.fp8) << op.name;
    }
  }
  EXPECT_EQ(fp8_projections, 5);
  EXPECT_FALSE(q_up_cast);  // q_norm writes the FP8 input (TELayerNormColumnParallelLinear)
  EXPECT_TRUE(q_down_cast);
}

TEST(MlaAttention, ActivationsOfALayerCountTheLatentsAndTheWiderHeads) {
  const ModelSpec m = v3();
  ParallelPlan plan{.tp = 1, .micro_batch_size = 1};
  plan.recompute = Recompute::selective;
  // Per token, bytes: the 10 h every layer keeps (norm inputs, the QKV and
  // MLP inputs, dropout masks), the latents 2 (1536 + 512) norm inputs +
  // 2 (1536 + 512) up-projection inputs + 2 x 64 rotary key, Q and K
  // 2 x 2 x 128 x 192, V and the attention output 2 x 2 x 128 x 128, and
  // the dense layer-0 SwiGLU intermediates 6 x 18432.
  const double per_token =
      10 * 7168.0 + 4 * (1536 + 512) + 2 * 64 + 4 * 128 * 192 + 4 * 128 * 128 + 6 * 18432.0;
  EXPECT_DOUBLE_EQ(per_token, 354432.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, plan, Recompute::selective, false), 4096 * per_token);
}

}  // namespace
}  // namespace trainsim::workloads
