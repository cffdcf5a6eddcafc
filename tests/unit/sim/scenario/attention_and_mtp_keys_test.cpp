// model.attention (mha / mla) with its shape keys, head_dim, qk_norm,
// mtp_depth and moe.moe_layer_offset, as the loader reads them: presets,
// overrides, and an error naming file, line, key, value and what was
// expected for every bad combination.
#include <gtest/gtest.h>

#include "platforms/input_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::sim {
namespace {

// One node of 8 H100s, the model section as given (indented lines).
std::string scenario(const std::string& model,
                     const std::string& plan = "tp: 1, pp: 1, global_batch_size: 8") {
  return "cluster: {gpu: H100, nodes: 1}\nmodel:\n" + model + "\nplan: {" + plan + "}\n";
}

// The model as read (the plan need not fit: these are shape tests).
workloads::ModelSpec model_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return scenario::parse_scenario_text(yaml, "t.yaml", overrides, {.check_memory = false}).model;
}

std::vector<std::string> problems(const std::string& yaml) {
  try {
    scenario::parse_scenario_text(yaml, "t.yaml");
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

// The one problem whose text holds `needle`, or "".
std::string problem_with(const std::vector<std::string>& list, const std::string& needle) {
  for (const auto& p : list)
    if (p.find(needle) != std::string::npos)
      return p;
  return "";
}

const std::string kMla = R"(  name: tiny-mla
  layers: 4
  hidden: 1024
  heads: 16
  seq_len: 1024
  vocab: 32000
  mlp: swiglu
  attention: mla
  q_lora_rank: 384
  kv_lora_rank: 256
  qk_nope_head_dim: 64
  qk_rope_head_dim: 32
  v_head_dim: 64)";

TEST(AttentionKeys, PresetsCarryTheirAttentionAndExplicitMlaShapesAreRead) {
  const auto v3 = model_of(scenario("  preset: deepseek-v3"));
  EXPECT_TRUE(v3.is_mla());
  EXPECT_EQ(v3.mla.q_lora_rank, 1536);
  EXPECT_EQ(v3.mtp_depth, 1);
  const auto m = model_of(scenario(kMla));
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.mla.q_lora_rank, 384);
  EXPECT_EQ(m.mla.qk_head_dim(), 96);
  // An MLA preset's ranks can be overridden; none turns query compression off.
  const auto lite = model_of(scenario("  preset: deepseek-v3\n  q_lora_rank: none"));
  EXPECT_EQ(lite.mla.q_lora_rank, 0);
  EXPECT_EQ(model_of(scenario("  preset: deepseek-v3"), {"model.mtp_depth=2"}).mtp_depth, 2);
  // Qwen3's 128-wide heads and qk norm; an explicit head_dim on a dense model.
  const auto qwen = model_of(scenario("  preset: qwen3-30b-a3b"));
  EXPECT_EQ(qwen.head_dim, 128);
  EXPECT_TRUE(qwen.qk_norm);
  EXPECT_EQ(model_of(scenario("  preset: llama3-8b\n  head_dim: 256")).head_dim, 256);
}

// A task names its layer in 16 bits (workloads/task_graph.hpp,
// kMaxTaskLayers): more layers are refused at their line, with the bound.
TEST(ModelKeys, MoreLayersThanATaskCanNameAreRefusedAtTheirLine) {
  const auto p = problems(scenario("  preset: llama3-8b\n  layers: 40000"));
  const std::string e = problem_with(p, "model.layers");
  ASSERT_FALSE(e.empty()) << (p.empty() ? "no problem" : p[0]);
  EXPECT_NE(e.find("t.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("40000"), std::string::npos) << e;
  EXPECT_NE(e.find("32767"), std::string::npos) << e;
  const auto at_most = problems(scenario("  preset: llama3-8b\n  layers: 32767"));
  EXPECT_TRUE(problem_with(at_most, "model.layers").empty()) << at_most.front();
}

TEST(AttentionKeys, MlaKeysWithoutAttentionMlaAreRefusedAtTheirLine) {
  const auto p = problems(scenario("  preset: llama3-8b\n  kv_lora_rank: 512"));
  const std::string e = problem_with(p, "model.kv_lora_rank");
  ASSERT_FALSE(e.empty()) << (p.empty() ? "no problem" : p[0]);
  EXPECT_NE(e.find("t.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("attention is mha"), std::string::npos) << e;
  EXPECT_NE(e.find("attention: mla"), std::string::npos) << e;
}

TEST(AttentionKeys, SwitchingToMlaNeedsItsRanksAndHeadWidths) {
  const auto p = problems(scenario("  preset: llama3-8b\n  attention: mla"));
  for (const char* key :
       {"model.kv_lora_rank", "model.qk_nope_head_dim", "model.qk_rope_head_dim", "model.v_head_dim"}) {
    const std::string e = problem_with(p, key);
    EXPECT_NE(e.find("missing"), std::string::npos) << key << ": " << e;
  }
  EXPECT_TRUE(problem_with(p, "model.q_lora_rank").empty());  // optional: none
}

TEST(AttentionKeys, MlaRefusesKeyValueHeadsHeadDimQkNormAndAnOddRotaryWidth) {
  EXPECT_NE(
      problem_with(problems(scenario(kMla + "\n  kv_heads: 4")), "model.kv_heads").find("no key/value heads"),
      std::string::npos);
  EXPECT_NE(problem_with(problems(scenario(kMla + "\n  head_dim: 64")), "model.head_dim").find("t.yaml:"),
            std::string::npos);
  EXPECT_FALSE(problem_with(problems(scenario(kMla + "\n  qk_norm: true")), "model.qk_norm").empty());
  auto odd = kMla;
  odd.replace(odd.find("qk_rope_head_dim: 32"), 20, "qk_rope_head_dim: 33");
  const std::string e = problem_with(problems(scenario(odd)), "model.qk_rope_head_dim");
  EXPECT_NE(e.find("33 is odd"), std::string::npos) << e;
  EXPECT_NE(e.find("t.yaml:14:"), std::string::npos) << e;
}

TEST(AttentionKeys, AnUnknownAttentionWordListsTheKinds) {
  const std::string e =
      problem_with(problems(scenario("  preset: llama3-8b\n  attention: linear")), "attention");
  EXPECT_NE(e.find("mha"), std::string::npos) << e;
  EXPECT_NE(e.find("mla"), std::string::npos) << e;
}

TEST(AttentionKeys, MlaWithATensorParallelDegreeThatDoesNotDivideItsHeadsIsRefused) {
  // 16 heads, tp 3 does not divide them (8 GPUs: dp auto would not fit, so dp 2 pp 1 on 6 GPUs of a 6-GPU
  // node).
  const auto p = problems("cluster: {gpu: H100, nodes: 1, gpus_per_node: 6}\nmodel:\n" + kMla +
                          "\nplan: {tp: 3, pp: 1, dp: 2, global_batch_size: 8}\n");
  const std::string e = problem_with(p, "plan.tp");
  EXPECT_NE(e.find("latent attention"), std::string::npos) << (p.empty() ? "no problem" : p[0]);
  EXPECT_NE(e.find("t.yaml:"), std::string::npos) << e;
}

TEST(AttentionKeys, MtpDepthWithContextParallelismIsRefused) {
  const auto p = problems(scenario("  preset: deepseek-v2-lite\n  mtp_depth: 1",
                                   "tp: 1, pp: 1, context_parallel: 2, global_batch_size: 8"));
  const std::string e = problem_with(p, "plan.context_parallel");
  EXPECT_NE(e.find("mtp_depth"), std::string::npos) << (p.empty() ? "no problem" : p[0]);
}

TEST(AttentionKeys, MoeLayerOffsetPicksTheOddLayersAndMustStayBelowTheFrequency) {
  const auto maverick = model_of(scenario("  preset: llama4-maverick"));
  EXPECT_EQ(maverick.moe.layer_offset, 1);
  const auto m =
      model_of(scenario("  preset: mixtral-8x7b\n  moe: {moe_layer_freq: 2, moe_layer_offset: 1}"));
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  const std::string e = problem_with(
      problems(scenario("  preset: mixtral-8x7b\n  moe: {moe_layer_freq: 2, moe_layer_offset: 2}")),
      "model.moe.moe_layer_offset");
  EXPECT_NE(e.find("expected 0 to 1"), std::string::npos) << e;
}

}  // namespace
}  // namespace trainsim::sim
