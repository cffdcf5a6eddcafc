// plan.recompute_modules as the loader reads it: Megatron's module words
// separated by spaces or commas, the default (core_attn alone), and an
// error naming the key, the bad word and what was expected.
#include <gtest/gtest.h>

#include "sim/scenario/scenario.hpp"
#include "support/loader_problems.hpp"

namespace trainsim::sim {
namespace {

// DeepSeek-V2-Lite (MLA, MoE) cut to 4 layers on one node of 8 H100s.
std::string scenario(const std::string& plan_extra) {
  return "cluster: {gpu: H100, nodes: 1}\nmodel: {preset: deepseek-v2-lite, layers: 4, seq_len: 1024}\n"
         "plan: {dp: 8, expert_parallel: 8, global_batch_size: 8, recompute: selective" +
         plan_extra + "}\n";
}

TEST(RecomputeModulesKeys, WordsBySpacesOrCommasInTheirOrderAndNoneByDefault) {
  using workloads::RecomputeModule;
  EXPECT_TRUE(scenario::parse_scenario_text(scenario(""), "s.yaml").plan.recompute_modules.empty());
  const auto s =
      scenario::parse_scenario_text(scenario(", recompute_modules: \"mla_up_proj, moe_act mlp\""), "s.yaml");
  EXPECT_EQ(s.plan.recompute_modules,
            (std::vector<RecomputeModule>{RecomputeModule::mla_up_proj, RecomputeModule::moe_act,
                                          RecomputeModule::mlp}));
}

TEST(RecomputeModulesKeys, AnUnmodelledModuleOrAnEmptyListNamesTheKeyAndTheExpectedWords) {
  const auto word =
      testing::loader_problems(scenario(", recompute_modules: \"mla_up_proj layernorm\""), "s.yaml");
  EXPECT_NE(word.find("plan.recompute_modules"), std::string::npos) << word;
  EXPECT_NE(word.find("has \"layernorm\", which trainsim does not model"), std::string::npos) << word;
  EXPECT_NE(word.find("expected core_attn, mla_up_proj, moe_act or mlp"), std::string::npos) << word;
  const auto empty = testing::loader_problems(scenario(", recompute_modules: \" \""), "s.yaml");
  EXPECT_NE(empty.find("plan.recompute_modules: is empty"), std::string::npos) << empty;
  const auto full = testing::loader_problems(
      "cluster: {gpu: H100, nodes: 1}\nmodel: {preset: deepseek-v2-lite, layers: 4, seq_len: 1024}\n"
      "plan: {dp: 8, expert_parallel: 8, global_batch_size: 8, recompute: full, recompute_modules: "
      "mla_up_proj}\n",
      "s.yaml");
  EXPECT_NE(full.find("given with recompute full"), std::string::npos) << full;
}

}  // namespace
}  // namespace trainsim::sim
