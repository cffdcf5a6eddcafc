// plan.moe_dispatcher and model.moe.max_nodes_per_token as the loader reads
// them: defaults (today's behaviour), values, and an error naming the key,
// the value and what was expected for every bad combination.
#include <gtest/gtest.h>

#include "sim/scenario/scenario.hpp"
#include "support/loader_problems.hpp"
#include "workloads/moe_dispatch.hpp"

namespace trainsim::sim {
namespace {

// A small MoE (4 layers, 16 experts top-4) on `nodes` nodes of 8 H100s.
std::string scenario(const std::string& moe_extra, const std::string& plan_extra, int nodes = 2,
                     int ep = 16) {
  return "cluster: {gpu: H100, nodes: " + std::to_string(nodes) +
         "}\nmodel:\n  layers: 4\n  hidden: 1024\n  heads: 8\n"
         "  seq_len: 1024\n  vocab: 8000\n  mlp: swiglu\n  moe:\n    experts: 16\n    top_k: 4\n" +
         moe_extra + "plan: {dp: " + std::to_string(8 * nodes) + ", expert_parallel: " + std::to_string(ep) +
         ", global_batch_size: " + std::to_string(8 * nodes) + plan_extra + "}\n";
}

scenario::Scenario load(const std::string& yaml) {
  return scenario::parse_scenario_text(yaml, "s.yaml");
}

std::string problems(const std::string& yaml) {
  return testing::loader_problems(yaml, "s.yaml");
}

TEST(DispatchKeys, AllToAllWithoutANodeLimitByDefault) {
  const auto s = load(scenario("", ""));
  EXPECT_EQ(s.plan.moe_dispatcher, workloads::MoeDispatcher::all_to_all);
  EXPECT_EQ(s.model.moe.max_nodes_per_token, 0);
  const auto d = load(scenario("    max_nodes_per_token: 1\n", ", moe_dispatcher: deepep"));
  EXPECT_EQ(d.plan.moe_dispatcher, workloads::MoeDispatcher::deepep);
  EXPECT_EQ(d.model.moe.max_nodes_per_token, 1);
}

TEST(DispatchKeys, BadWordsAndNumbersNameTheKeyAndWhatWasExpected) {
  const auto word = problems(scenario("", ", moe_dispatcher: nvshmem"));
  EXPECT_NE(word.find("moe_dispatcher"), std::string::npos) << word;
  EXPECT_NE(word.find("deepep"), std::string::npos) << word;
  const auto zero = problems(scenario("    max_nodes_per_token: 0\n", ""));
  EXPECT_NE(zero.find("max_nodes_per_token"), std::string::npos) << zero;
}

TEST(DispatchKeys, MoreNodesPerTokenThanTheEpGroupSpansIsRefused) {
  const auto p = problems(scenario("    max_nodes_per_token: 3\n", ""));
  EXPECT_NE(p.find("model.moe.max_nodes_per_token"), std::string::npos) << p;
  EXPECT_NE(p.find("an EP group spans 2 nodes"), std::string::npos) << p;
  EXPECT_NE(p.find("expected at most 2"), std::string::npos) << p;
  // ep 8 on 8-GPU nodes: one node.
  const auto one = problems(scenario("    max_nodes_per_token: 2\n", "", 2, 8));
  EXPECT_NE(one.find("spans 1 node "), std::string::npos) << one;
}

TEST(DispatchKeys, NodesThatCannotHoldTopKExpertsAreRefused) {
  // ep 16 over 2 nodes: one expert per GPU, 8 per node; top-9 needs 2 nodes.
  std::string yaml = scenario("    max_nodes_per_token: 1\n", "");
  yaml.replace(yaml.find("top_k: 4"), 8, "top_k: 9");
  const auto p = problems(yaml);
  EXPECT_NE(p.find("fewer than top_k = 9"), std::string::npos) << p;
  EXPECT_NE(p.find("expected at least 2"), std::string::npos) << p;
}

TEST(DispatchKeys, DeepepNeedsAnEvenSpreadOverNodesADroplessMoeAndAMoeModel) {
  // ep 12 of 24 positions on 8-GPU nodes: 8 + 4 GPUs.
  const auto uneven = problems(
      "cluster: {gpu: H100, nodes: 3}\nmodel:\n  layers: 4\n  hidden: 1024\n  heads: 8\n  seq_len: 1024\n"
      "  vocab: 8000\n  mlp: swiglu\n  moe: {experts: 12, top_k: 2}\n"
      "plan: {dp: 24, expert_parallel: 12, global_batch_size: 24, moe_dispatcher: deepep}\n");
  EXPECT_NE(uneven.find("plan.moe_dispatcher"), std::string::npos) << uneven;
  EXPECT_NE(uneven.find("not spread in equal consecutive shares"), std::string::npos) << uneven;
  const auto capacity = problems(scenario("    capacity_factor: 1.25\n", ", moe_dispatcher: deepep"));
  EXPECT_NE(capacity.find("dropless"), std::string::npos) << capacity;
  EXPECT_NE(capacity.find("capacity_factor: none"), std::string::npos) << capacity;
  const auto dense = problems(
      "cluster: {gpu: H100, nodes: 1}\nmodel: {preset: llama2-7b}\n"
      "plan: {dp: 8, global_batch_size: 8, moe_dispatcher: deepep}\n");
  EXPECT_NE(dense.find("deepep with a dense model"), std::string::npos) << dense;
}

}  // namespace
}  // namespace trainsim::sim

namespace trainsim::sim {
namespace {

// plan.moe_fp8_dispatch: unset keeps DeepEP's FP8 dispatch under FP8
// training (today's behaviour); false sends BF16 as Megatron-core does.
TEST(DispatchKeys, Fp8DispatchDefaultsToDeepepsUnderFp8AndCanBeTurnedOff) {
  const std::string fp8 = ", moe_dispatcher: deepep, precision: fp8";
  const auto d = load(scenario("", fp8));
  EXPECT_FALSE(d.plan.moe_fp8_dispatch.has_value());
  EXPECT_TRUE(d.plan.fp8_dispatch());
  EXPECT_DOUBLE_EQ(workloads::dispatch_element_bytes(d.plan), 1.0 + 4.0 / 128.0);
  const auto bf16 = load(scenario("", fp8 + ", moe_fp8_dispatch: false"));
  EXPECT_FALSE(bf16.plan.fp8_dispatch());
  EXPECT_DOUBLE_EQ(workloads::dispatch_element_bytes(bf16.plan), 2.0);
  EXPECT_FALSE(load(scenario("", ", moe_dispatcher: deepep")).plan.fp8_dispatch());
}

TEST(DispatchKeys, Fp8DispatchWithoutDeepepOrFp8IsRefused) {
  const auto a2a = problems(scenario("", ", precision: fp8, moe_fp8_dispatch: true"));
  EXPECT_NE(a2a.find("moe_fp8_dispatch"), std::string::npos) << a2a;
  EXPECT_NE(a2a.find("true with moe_dispatcher all_to_all and precision fp8"), std::string::npos) << a2a;
  EXPECT_NE(a2a.find("expected moe_dispatcher: deepep and precision: fp8"), std::string::npos) << a2a;
  const auto bf16 = problems(scenario("", ", moe_dispatcher: deepep, moe_fp8_dispatch: true"));
  EXPECT_NE(bf16.find("precision bf16"), std::string::npos) << bf16;
  EXPECT_EQ(problems(scenario("", ", moe_dispatcher: deepep, precision: fp8, moe_fp8_dispatch: true")), "");
}

}  // namespace
}  // namespace trainsim::sim
