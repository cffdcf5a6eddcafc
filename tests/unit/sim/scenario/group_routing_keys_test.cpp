// model.moe.router_num_groups and router_group_topk as the loader reads
// them (Megatron's names as aliases), and an error naming the file, line,
// key, value and what was expected for every bad combination, alone, with
// the EP layout (deepep) and with max_nodes_per_token.
#include <gtest/gtest.h>

#include "sim/scenario/scenario.hpp"
#include "support/loader_problems.hpp"

namespace trainsim::sim {
namespace {

// A small MoE (4 layers, `experts` experts top-4) on 2 nodes of 8 H100s,
// dp 16; `moe_extra` starts at line 12.
std::string scenario(const std::string& moe_extra, const std::string& plan_extra, int experts = 16,
                     int ep = 16) {
  return "cluster: {gpu: H100, nodes: 2}\nmodel:\n  layers: 4\n  hidden: 1024\n  heads: 8\n"
         "  seq_len: 1024\n  vocab: 8000\n  mlp: swiglu\n  moe:\n    experts: " +
         std::to_string(experts) + "\n    top_k: 4\n" + moe_extra +
         "plan: {dp: 16, expert_parallel: " + std::to_string(ep) + ", global_batch_size: 16" + plan_extra +
         "}\n";
}

std::string problems(const std::string& yaml) {
  return testing::loader_problems(yaml, "s.yaml");
}

TEST(GroupRoutingKeys, UnsetByDefaultReadUnderEitherNameWithDeepep) {
  const auto plain = scenario::parse_scenario_text(scenario("", ""), "s.yaml");
  EXPECT_EQ(plain.model.moe.router_num_groups, 0);
  EXPECT_EQ(plain.model.moe.router_group_topk, 0);
  const auto s = scenario::parse_scenario_text(
      scenario("    router_num_groups: 4\n    router_group_topk: 2\n", ", moe_dispatcher: deepep"), "s.yaml");
  EXPECT_EQ(s.model.moe.router_num_groups, 4);
  EXPECT_EQ(s.model.moe.router_group_topk, 2);
  const auto megatron = scenario::parse_scenario_text(
      scenario("    moe_router_num_groups: 4\n    moe_router_group_topk: 2\n", ""), "s.yaml");
  EXPECT_EQ(megatron.model.moe.router_num_groups, 4);
  EXPECT_EQ(megatron.model.moe.router_group_topk, 2);
}

TEST(GroupRoutingKeys, KeyRulesNameFileLineKeyAndValue) {
  const auto divide = problems(scenario("    router_num_groups: 3\n    router_group_topk: 1\n", ""));
  EXPECT_NE(divide.find("s.yaml:12"), std::string::npos) << divide;
  EXPECT_NE(divide.find("router_num_groups"), std::string::npos) << divide;
  EXPECT_NE(divide.find("3 does not divide model.moe.experts = 16"), std::string::npos) << divide;
  const auto alone = problems(scenario("    router_group_topk: 2\n", ""));
  EXPECT_NE(alone.find("router_num_groups"), std::string::npos) << alone;
  EXPECT_NE(alone.find("missing with router_group_topk = 2"), std::string::npos) << alone;
  const auto above = problems(scenario("    router_num_groups: 4\n    router_group_topk: 5\n", ""));
  EXPECT_NE(above.find("s.yaml:13"), std::string::npos) << above;
  EXPECT_NE(above.find("5 is more than router_num_groups = 4; expected 1 to 4"), std::string::npos) << above;
  const auto zero = problems(scenario("    router_num_groups: 0\n    router_group_topk: 1\n", ""));
  EXPECT_NE(zero.find("router_num_groups"), std::string::npos) << zero;
  // 16 groups of 1 expert, 2 kept: 2 experts for top-4.
  const auto few = problems(scenario("    router_num_groups: 16\n    router_group_topk: 2\n", ""));
  EXPECT_NE(few.find("fewer than top_k = 4; expected at least 4"), std::string::npos) << few;
}

TEST(GroupRoutingKeys, DeepepRefusesGroupsThatStraddleGpusAllToAllTakesThem) {
  // 12 experts at ep 4: 3 a GPU; 6 groups of 2 straddle GPUs.
  const std::string groups = "    router_num_groups: 6\n    router_group_topk: 2\n";
  const auto deepep = problems(scenario(groups, ", moe_dispatcher: deepep", 12, 4));
  EXPECT_NE(deepep.find("model.moe.router_num_groups"), std::string::npos) << deepep;
  EXPECT_NE(deepep.find("groups of 2 experts against 3 experts a GPU"), std::string::npos) << deepep;
  EXPECT_NE(deepep.find("straddles GPUs"), std::string::npos) << deepep;
  EXPECT_EQ(problems(scenario(groups, "", 12, 4)), "");
}

TEST(GroupRoutingKeys, WithANodeLimitGroupsMustLieWithinANode) {
  // ep 16 over 2 nodes (8 experts a node); one group of 16 spans both.
  const auto p =
      problems(scenario("    max_nodes_per_token: 1\n    router_num_groups: 1\n    router_group_topk: 1\n",
                        ", moe_dispatcher: deepep"));
  EXPECT_NE(p.find("model.moe.router_num_groups"), std::string::npos) << p;
  EXPECT_NE(p.find("1 with max_nodes_per_token = 1: a group of 16 experts spans nodes of 8"),
            std::string::npos)
      << p;
  EXPECT_EQ(
      problems(scenario("    max_nodes_per_token: 1\n    router_num_groups: 4\n    router_group_topk: 1\n",
                        ", moe_dispatcher: deepep")),
      "");
}

}  // namespace
}  // namespace trainsim::sim
