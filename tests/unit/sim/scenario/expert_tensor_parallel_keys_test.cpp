// plan.expert_tensor_parallel as the loader reads it: left out it follows
// tp (today's layout), Megatron's spelling is an alias, and every bad value
// or combination is an error naming the file, the line, the key, the value
// and what was expected.
#include <gtest/gtest.h>

#include "sim/scenario/scenario.hpp"
#include "support/loader_problems.hpp"

namespace trainsim::sim {
namespace {

// A small MoE (4 layers, 16 experts top-4) on `nodes` nodes of 8 H100s, the
// plan given as a block mapping so that every key has its own line.
std::string scenario(const std::string& plan_lines, int nodes = 2) {
  return "cluster: {gpu: H100, nodes: " + std::to_string(nodes) +
         "}\nmodel:\n  layers: 4\n  hidden: 1024\n  heads: 8\n"
         "  seq_len: 1024\n  vocab: 8000\n  mlp: swiglu\n  moe:\n    experts: 16\n    top_k: 4\n"
         "plan:\n" +
         plan_lines;
}

const std::string kFolded =
    "  tp: 2\n  sequence_parallel: true\n  dp: 8\n  expert_parallel: 16\n  global_batch_size: 8\n";

scenario::Scenario load(const std::string& yaml) {
  return scenario::parse_scenario_text(yaml, "s.yaml");
}

std::string problems(const std::string& yaml) {
  return testing::loader_problems(yaml, "s.yaml");
}

TEST(ExpertTensorParallelKeys, LeftOutItFollowsTp) {
  const auto s =
      load(scenario("  tp: 2\n  sequence_parallel: true\n  dp: 8\n  expert_parallel: 8\n"
                    "  global_batch_size: 8\n"));
  EXPECT_EQ(s.plan.etp, 0);
  EXPECT_EQ(s.plan.expert_tp(), 2);
  EXPECT_FALSE(s.plan.expert_tp_folded());
  EXPECT_EQ(s.plan.expert_data_parallel_size(), 1);
}

TEST(ExpertTensorParallelKeys, OneFoldsTheEpGroupOverTpAndMegatronsSpellingIsAnAlias) {
  // EP 16 exceeds dp 8: only the folded layout (EP over tp x dp) holds it.
  for (const char* key : {"expert_tensor_parallel", "expert_tensor_parallel_size"}) {
    const auto s = load(scenario(kFolded + "  " + key + ": 1\n"));
    EXPECT_EQ(s.plan.expert_tp(), 1) << key;
    EXPECT_TRUE(s.plan.expert_tp_folded()) << key;
    EXPECT_EQ(s.plan.expert_data_parallel_size(), 1) << key;
  }
  // Without the key the same EP is refused: it must divide dp.
  const auto p = problems(scenario(kFolded));
  EXPECT_NE(p.find("plan.expert_parallel"), std::string::npos) << p;
}

TEST(ExpertTensorParallelKeys, AnExpertTpBetweenOneAndTpIsADivisorOfTp) {
  const auto s =
      load(scenario("  tp: 4\n  sequence_parallel: true\n  dp: 4\n  expert_parallel: 4\n"
                    "  global_batch_size: 4\n  expert_tensor_parallel: 2\n"));
  EXPECT_EQ(s.plan.expert_tp(), 2);
  EXPECT_TRUE(s.plan.expert_tp_folded());
  EXPECT_EQ(s.plan.expert_data_parallel_size(), 2);  // 4 x 4 / (2 x 4)
  const auto p =
      problems(scenario("  tp: 4\n  sequence_parallel: true\n  dp: 4\n  expert_parallel: 4\n"
                        "  global_batch_size: 4\n  expert_tensor_parallel: 3\n"));
  EXPECT_NE(p.find("s.yaml:18:"), std::string::npos) << p;
  EXPECT_NE(p.find("plan.expert_tensor_parallel"), std::string::npos) << p;
  EXPECT_NE(p.find("3 does not divide tp = 4"), std::string::npos) << p;
  EXPECT_NE(p.find("expected a divisor of 4 (1, 2, 4)"), std::string::npos) << p;
  // Above tp is no divisor either.
  const auto above =
      problems(scenario("  tp: 2\n  sequence_parallel: true\n  dp: 8\n  expert_parallel: 4\n"
                        "  global_batch_size: 8\n  expert_tensor_parallel: 4\n"));
  EXPECT_NE(above.find("4 does not divide tp = 2"), std::string::npos) << above;
}

TEST(ExpertTensorParallelKeys, AnExpertTpBetweenOneAndTpWithDeepepLoads) {
  // Megatron's flex dispatcher over the expert-TP x EP block
  // (workloads/expert_parallel.hpp, dispatch_spans_expert_tp).
  const auto p =
      problems(scenario("  tp: 4\n  sequence_parallel: true\n  dp: 4\n  expert_parallel: 4\n"
                        "  global_batch_size: 4\n  expert_tensor_parallel: 2\n  moe_dispatcher: deepep\n"));
  EXPECT_EQ(p, "");
}

TEST(ExpertTensorParallelKeys, EpTimesExpertTpMustDivideTheStage) {
  // One node: a stage of tp 2 x dp 4 = 8 GPUs cannot hold an EP group of 16.
  const auto p =
      problems(scenario("  tp: 2\n  sequence_parallel: true\n  dp: 4\n  expert_parallel: 16\n"
                        "  global_batch_size: 4\n  expert_tensor_parallel: 1\n",
                        1));
  EXPECT_NE(p.find("plan.expert_tensor_parallel"), std::string::npos) << p;
  EXPECT_NE(
      p.find("expert_parallel x expert_tensor_parallel = 16 does not divide tp x cp x dp = 2 x 1 x 4 = 8"),
      std::string::npos)
      << p;
  EXPECT_NE(p.find("expected expert_parallel a divisor of 8"), std::string::npos) << p;
}

TEST(ExpertTensorParallelKeys, FoldingNeedsSequenceParallelismAndAMoeModel) {
  const auto sp =
      problems(scenario("  tp: 2\n  dp: 8\n  expert_parallel: 16\n  global_batch_size: 8\n"
                        "  expert_tensor_parallel: 1\n"));
  EXPECT_NE(sp.find("needs sequence_parallel: true"), std::string::npos) << sp;
  const auto dense = problems(
      "cluster: {gpu: H100, nodes: 1}\nmodel: {preset: llama3-8b}\nplan:\n  tp: 2\n  sequence_parallel: "
      "true\n"
      "  dp: 4\n  global_batch_size: 4\n  expert_tensor_parallel: 1\n");
  EXPECT_NE(dense.find("plan.expert_tensor_parallel"), std::string::npos) << dense;
  EXPECT_NE(dense.find("with a dense model"), std::string::npos) << dense;
  const auto zero = problems(scenario(kFolded + "  expert_tensor_parallel: 0\n"));
  EXPECT_NE(zero.find("expert_tensor_parallel"), std::string::npos) << zero;
}

}  // namespace
}  // namespace trainsim::sim
