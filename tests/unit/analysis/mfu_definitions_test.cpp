#include "analysis/mfu_definitions.hpp"

#include <gtest/gtest.h>

namespace trainsim::analysis {
namespace {

workloads::ModelSpec preset(const char* name) {
  auto m = workloads::find_model_preset(name);
  EXPECT_TRUE(m.has_value()) << name;
  return m.value_or(workloads::ModelSpec{});
}

// NVIDIA/dgxc-benchmarking (commit 143b90dd91f9), llama3.1/README_8b.md, "Notes":
//   attention flops = 12 * 32 * 4096^2 * (1 + 8/32 + 8192/4096) = 20,937,965,568
//   mlp flops       = 18 * 32 * 14336 * 4096                    = 33,822,867,456
//   embedding flops = 6 * 128256 * 4096                          =  3,152,019,456
//   model flops (GBS 1) = 8192 * 57,912,852,480 = 474,422,087,516,160 = "4.74E+14"
TEST(MfuDefinitions, NvidiaCountsLlama31_8bAsTheDgxCloudTables) {
  const auto m = preset("llama3.1-8b");
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::nvidia), 57912852480.0);
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::nvidia) * m.seq_len, 474422087516160.0);
}

// The same repository, nemo_megatron/README_175b.md, "Notes" (GPT-3 175B, s 2048):
//   attention flops = 24 * 96 * 12288^2 + 12 * 96 * 12288 * 2048 = 376,883,380,224
//   mlp flops       = 48 * 96 * 12288^2                           = 695,784,701,952
//   embedding flops = 6 * 51200 * 12288                           =   3,774,873,600
//   per token 1,076,442,955,776; x 2048 = 2.20E+15 per sequence
TEST(MfuDefinitions, NvidiaCountsGpt3_175bAsTheDgxCloudTables) {
  const auto m = preset("gpt3-175b");
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::nvidia), 1076442955776.0);
}

// 6N, N every parameter of Llama 3 8B (Hugging Face's count, 8,030,261,248):
//   embedding and output layer 2 * 128256 * 4096             = 1,050,673,152
//   per layer: Q, O 2 * 4096^2 = 33,554,432; K, V 2 * 4096 * 1024 = 8,388,608;
//              MLP 3 * 4096 * 14336 = 176,160,768; two RMSNorms 8,192
//              = 218,112,000, x 32 layers                    = 6,979,584,000
//   final norm 4,096; N = 8,030,261,248; 6N = 48,181,567,488
TEST(MfuDefinitions, SixNCountsEveryParameterOfLlama3_8bAndNoAttention) {
  const auto m = preset("llama3-8b");
  EXPECT_DOUBLE_EQ(m.parameter_count(), 8030261248.0);
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::six_n), 48181567488.0);
}

// PaLM (appendix B), Llama 3 8B at 8,192 tokens:
//   N without the input embedding 8,030,261,248 - 128256 * 4096 = 7,504,924,672
//   6N = 45,029,548,032; 12 L H Q T = 12 * 32 * 32 * 128 * 8192 = 12,884,901,888
//   per token 57,914,449,920: NVIDIA's figure plus the norms' 6 * 266,240
TEST(MfuDefinitions, PalmCountsLlama3_8bWithoutTheInputEmbedding) {
  const auto m = preset("llama3-8b");
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::palm), 57914449920.0);
  EXPECT_DOUBLE_EQ(
      model_flops_per_token(m, MfuDefinition::palm) - model_flops_per_token(m, MfuDefinition::nvidia),
      6.0 * (32 * 2 * 4096 + 4096));
}

// PaLM for GPT-3 175B, whose output layer is the (tied) input embedding:
//   per layer 12 h^2 + 13 h = 1,811,939,328 + 159,744 = 1,812,099,072 (weights,
//   biases, two LayerNorms), x 96 = 173,961,510,912, final LayerNorm 24,576:
//   N = 173,961,535,488, 6N = 1,043,769,212,928
//   12 L h s = 12 * 96 * 12288 * 2048 = 28,991,029,248
//   per token 1,072,760,242,176: no output-layer FLOPs, unlike trainsim's and NVIDIA's
TEST(MfuDefinitions, PalmLeavesOutTheTiedOutputLayerOfGpt3_175b) {
  const auto m = preset("gpt3-175b");
  EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::palm), 1072760242176.0);
}

// trainsim's own model FLOPs (ModelSpec::iteration_model_flops) are NVIDIA's
// for a dense model: the same matmuls and the same full attention.
TEST(MfuDefinitions, NvidiaEqualsTrainsimsOwnCountForADenseModel) {
  for (const char* name : {"gpt3-175b", "llama2-7b", "llama3.1-405b"}) {
    const auto m = preset(name);
    EXPECT_DOUBLE_EQ(model_flops_per_token(m, MfuDefinition::nvidia), m.iteration_model_flops(1) / m.seq_len)
        << name;
  }
}

// Mixtral 8x7B: NeMo's mixtral formula counts top_k = 2 experts' MLPs and no
// router; trainsim's own count has the router (2 h E per token forward, 6 h E
// with the backward: 6 * 4096 * 8 = 196,608 per layer).
TEST(MfuDefinitions, NvidiaCountsMixtralsActiveExpertsWithoutTheRouter) {
  const auto m = preset("mixtral-8x7b");
  EXPECT_DOUBLE_EQ(m.iteration_model_flops(1) / m.seq_len - model_flops_per_token(m, MfuDefinition::nvidia),
                   32 * 6.0 * 4096 * 8);
}

TEST(MfuDefinitions, ARunWithoutAModelShapeCountsNothing) {
  const workloads::ModelSpec trace;  // a Chakra trace: no layers
  for (const auto& d : mfu_definitions())
    EXPECT_EQ(model_flops_per_token(trace, d.definition), 0) << d.key;
}

TEST(MfuDefinitions, KeysAreTheSummaryKeysInOrder) {
  ASSERT_EQ(mfu_definitions().size(), 3u);
  EXPECT_EQ(mfu_definitions()[0].key, "mfu_6n");
  EXPECT_EQ(mfu_definitions()[1].key, "mfu_palm");
  EXPECT_EQ(mfu_definitions()[2].key, "mfu_nvidia");
}

}  // namespace
}  // namespace trainsim::analysis
