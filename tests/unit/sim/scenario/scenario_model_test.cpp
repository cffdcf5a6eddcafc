// The model section's flash_attention key and the plan's gradient all-reduce
// precision, as the loader reads them.
#include <gtest/gtest.h>

#include "platforms/input_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::sim {
namespace {

std::string scenario(const std::string& model_extra, const std::string& plan_extra = "") {
  return "cluster: {gpu: A100, nodes: 1}\nmodel:\n  preset: " + model_extra +
         "\nplan: {tp: 2, pp: 2, global_batch_size: 16" + plan_extra + "}\n";
}

std::vector<std::string> problems(const std::string& yaml) {
  try {
    scenario::parse_scenario_text(yaml, "t.yaml");
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

TEST(ScenarioModel, FlashAttentionDefaultsToThePresetAndCanBeSet) {
  EXPECT_FALSE(scenario::parse_scenario_text(scenario("gpt3-1.3b"), "t.yaml").model.flash_attention);
  EXPECT_TRUE(scenario::parse_scenario_text(scenario("llama2-7b"), "t.yaml").model.flash_attention);
  EXPECT_TRUE(scenario::parse_scenario_text(scenario("gpt3-1.3b\n  flash_attention: true"), "t.yaml")
                  .model.flash_attention);
  EXPECT_FALSE(scenario::parse_scenario_text(scenario("llama2-7b"), "t.yaml", {"model.flash_attention=false"})
                   .model.flash_attention);
  const auto p = problems(scenario("gpt3-1.3b\n  flash_attention: sometimes"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("t.yaml:4:"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("model.flash_attention"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("true or false"), std::string::npos) << p[0];
}

TEST(ScenarioModel, GradientAllReducePrecisionSetsItsBytes) {
  EXPECT_EQ(scenario::parse_scenario_text(scenario("gpt3-1.3b"), "t.yaml").plan.grad_bytes, 2);
  EXPECT_EQ(scenario::parse_scenario_text(scenario("gpt3-1.3b", ", grad_allreduce_dtype: fp32"), "t.yaml")
                .plan.grad_bytes,
            4);
  EXPECT_EQ(scenario::parse_scenario_text(scenario("gpt3-1.3b", ", grad_allreduce_dtype: fp16"), "t.yaml")
                .plan.grad_bytes,
            2);
  const auto p = problems(scenario("gpt3-1.3b", ", grad_allreduce_dtype: int8"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("plan.grad_allreduce_dtype"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("fp32"), std::string::npos) << p[0];
}

TEST(ScenarioModel, NewPresetsAreListedInTheUnknownPresetMessage) {
  const auto p = problems(scenario("gpt5"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("llama3.1-405b"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("mt-nlg-530b"), std::string::npos) << p[0];
}

}  // namespace
}  // namespace trainsim::sim
