// The presets' sizes against the parameter counts their sources publish.
#include <gtest/gtest.h>

#include "workloads/model_spec.hpp"

namespace trainsim::workloads {
namespace {

double billions(const char* name) {
  const auto m = find_model_preset(name);
  EXPECT_TRUE(m.has_value()) << name;
  return m ? m->parameter_count() / 1e9 : 0;
}

TEST(ModelPresets, Gpt3FamilyHasTheSizesOfBrownEtAlTable21) {
  EXPECT_NEAR(billions("gpt3-125m"), 0.125, 0.01);
  EXPECT_NEAR(billions("gpt3-350m"), 0.35, 0.01);
  EXPECT_NEAR(billions("gpt3-760m"), 0.76, 0.02);
  EXPECT_NEAR(billions("gpt3-1.3b"), 1.3, 0.05);
  EXPECT_NEAR(billions("gpt3-2.7b"), 2.7, 0.05);
  EXPECT_NEAR(billions("gpt3-6.7b"), 6.7, 0.1);
  EXPECT_NEAR(billions("gpt3-13b"), 13.0, 0.2);
  EXPECT_NEAR(billions("gpt3-175b"), 175.0, 1.5);
}

TEST(ModelPresets, MegatronScaleModelsHaveTheirPublishedSizes) {
  EXPECT_NEAR(billions("mt-nlg-530b"), 530, 2);   // Smith et al. 2022
  EXPECT_NEAR(billions("megatron-1t"), 1008, 2);  // Narayanan et al. SC21, Table 1
}

TEST(ModelPresets, LlamaPresetsMatchTheirModelCards) {
  // Parameter counts of the Hugging Face checkpoints.
  EXPECT_NEAR(billions("llama3-8b"), 8.030, 0.001);
  EXPECT_NEAR(billions("llama3-70b"), 70.554, 0.001);
  EXPECT_NEAR(billions("llama3.1-8b"), 8.030, 0.001);
  EXPECT_NEAR(billions("llama3.1-70b"), 70.554, 0.001);
  EXPECT_NEAR(billions("llama3.1-405b"), 405.853, 0.001);
  const auto m = *find_model_preset("llama3.1-405b");
  EXPECT_EQ(m.kv_heads, 8);  // grouped-query attention
  EXPECT_TRUE(m.swiglu);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_FALSE(m.tied_embeddings);
}

TEST(ModelPresets, FlashAttentionDefaultsFollowEachFamilysTrainingSetup) {
  EXPECT_FALSE(find_model_preset("gpt3-175b")->flash_attention);
  EXPECT_FALSE(find_model_preset("mt-nlg-530b")->flash_attention);
  EXPECT_TRUE(find_model_preset("llama2-7b")->flash_attention);
  EXPECT_TRUE(find_model_preset("llama3-70b")->flash_attention);
}

double active_billions(const char* name) {
  const auto m = find_model_preset(name);
  EXPECT_TRUE(m.has_value()) << name;
  return m ? m->active_parameter_count() / 1e9 : 0;
}

// DeepSeek-V2 and V3 quote "activated" parameters without the input
// embedding (a lookup, not a matmul): V2-Lite's 2.4B and V3's 37B are what
// is left of trainsim's active count (2.66B, 37.55B: V3's would round to
// 38B) once the 102,400 x 2048 and 129,280 x 7168 tables are taken out.
// DeepSeekMoE 16B, Qwen, Mistral and Meta count both embedding tables.
double deepseek_activated_billions(const char* name) {
  const auto m = *find_model_preset(name);
  return (m.active_parameter_count() - m.embedding_parameters()) / 1e9;
}

TEST(ModelPresets, DeepSeekV3Has671BParametersAnd37BActivated) {
  // Hand count from config_671B.json: 3 dense layers of 583,483,392, 58 MoE
  // layers of 11,507,286,016 (MLA 187,107,328 with its latent norms, two
  // norms, 256 + 1 experts of 3 x 7168 x 2048, the 7168 x 256 router), the
  // two 129,280 x 7168 tables and the final norm.
  const auto m = *find_model_preset("deepseek-v3");
  EXPECT_DOUBLE_EQ(m.layer_parameters(0), 583483392.0);
  EXPECT_DOUBLE_EQ(m.layer_parameters(3), 11507286016.0);
  EXPECT_DOUBLE_EQ(m.parameter_count(), 3 * 583483392.0 + 58 * 11507286016.0 + 2 * 129280.0 * 7168 + 7168);
  EXPECT_NEAR(billions("deepseek-v3"), 671, 0.5);
  EXPECT_NEAR(deepseek_activated_billions("deepseek-v3"), 37, 0.5);
  // The MTP module (a MoE layer, two norms, the 2h x h projection, its
  // final norm: 11.61B) and the copies of the embedding and output head the
  // checkpoint stores with it make the 685B of the Hugging Face release.
  EXPECT_NEAR(m.mtp_parameters() / 1e9, 11.61, 0.01);
  EXPECT_NEAR((m.parameter_count() + m.mtp_parameters() + 2 * 129280.0 * 7168) / 1e9, 685, 1);
  EXPECT_EQ(m.moe_layers_in(0, m.layers), 58);
  EXPECT_TRUE(m.mtp_layers_are_moe());
}

TEST(ModelPresets, DeepSeekV2LiteHas15Point7BParametersAnd2Point4BActivated) {
  EXPECT_NEAR(billions("deepseek-v2-lite"), 15.7, 0.05);
  EXPECT_NEAR(deepseek_activated_billions("deepseek-v2-lite"), 2.4, 0.06);
}

TEST(ModelPresets, Qwen3MoePresetsMatchTheirModelCards) {
  // 94 layers of 2,487,755,008 (attention 71,303,168 with 128-wide heads,
  // q and k norms, 128 experts of 3 x 4096 x 1536, the router), two
  // 151,936 x 4096 tables.
  const auto big = *find_model_preset("qwen3-235b-a22b");
  EXPECT_DOUBLE_EQ(big.layer_parameters(0), 2487755008.0);
  EXPECT_NEAR(billions("qwen3-235b-a22b"), 235, 0.5);
  EXPECT_NEAR(active_billions("qwen3-235b-a22b"), 22, 0.5);
  EXPECT_NEAR(billions("qwen3-30b-a3b"), 30.5, 0.05);
  EXPECT_NEAR(active_billions("qwen3-30b-a3b"), 3.3, 0.06);
  EXPECT_EQ(big.attention_head_dim(), 128);  // not 4096 / 64
}

TEST(ModelPresets, Mixtral8x22bHas141BParametersAnd39BActive) {
  EXPECT_NEAR(billions("mixtral-8x22b"), 141, 0.5);
  EXPECT_NEAR(active_billions("mixtral-8x22b"), 39, 0.5);
}

TEST(ModelPresets, Llama4TextModelsHaveTheirSizesAnd17BActive) {
  // Meta's 109B and 400B include the vision encoder; the text models are
  // 107.77B and 400.71B by the config's shapes.
  EXPECT_NEAR(billions("llama4-scout"), 107.77, 0.01);
  EXPECT_NEAR(billions("llama4-maverick"), 400.71, 0.01);
  EXPECT_NEAR(active_billions("llama4-scout"), 17, 0.5);
  EXPECT_NEAR(active_billions("llama4-maverick"), 17, 0.5);
  // Maverick's MoE layers are the odd ones (interleave_moe_layer_step 2).
  const auto maverick = *find_model_preset("llama4-maverick");
  EXPECT_FALSE(maverick.is_moe_layer(0));
  EXPECT_TRUE(maverick.is_moe_layer(1));
  EXPECT_TRUE(maverick.is_moe_layer(47));
  EXPECT_EQ(maverick.moe_layers_in(0, 48), 24);
}

}  // namespace
}  // namespace trainsim::workloads
