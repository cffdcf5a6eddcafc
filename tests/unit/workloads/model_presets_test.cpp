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

}  // namespace
}  // namespace trainsim::workloads
