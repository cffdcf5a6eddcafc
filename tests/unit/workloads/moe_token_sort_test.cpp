// The alltoall dispatcher's sort of the received tokens by local expert and
// back (workloads/moe_token_sort.hpp), against hand counts of its bytes.
#include "workloads/moe_token_sort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace trainsim::workloads {
namespace {

// Qwen3-30B-A3B (h 2048, 128 experts, top-8) at s 4096, micro-batch 1, on
// EP 16 (8 local experts): every GPU's experts process 4096 x 8 = 32,768
// token copies under balanced routing.
ModelSpec qwen3_30b() {
  auto m = *find_model_preset("qwen3-30b-a3b");
  m.seq_len = 4096;
  return m;
}

const TransformerOp* find(const std::vector<TransformerOp>& ops, const std::string& name, OpPass pass) {
  const auto it = std::find_if(ops.begin(), ops.end(),
                               [&](const auto& op) { return op.name == name && op.pass == pass; });
  return it == ops.end() ? nullptr : &*it;
}

TEST(MoeTokenSort, AlltoallDispatcherSortsAndUnsortsEachPassWithItsHandCountedBytes) {
  const auto ops = moe_layer_ops(qwen3_30b(), layer_setup(qwen3_30b(), 1, 1, false, 16));
  // 32,768 copies x 2,048 x (2 + 2) bytes, and the fp32 probability of each
  // copy read and written (8 bytes) with the sort.
  const double tokens = 32768.0 * 2048 * 4;
  const double probabilities = 32768.0 * 8;
  for (auto pass : {OpPass::forward, OpPass::backward_input}) {
    const std::string suffix = pass == OpPass::forward ? "" : ".bwd";
    const auto* sort = find(ops, "sort_by_expert" + suffix, pass);
    const auto* unsort = find(ops, "unsort_by_expert" + suffix, pass);
    ASSERT_NE(sort, nullptr);
    ASSERT_NE(unsort, nullptr);
    EXPECT_DOUBLE_EQ(sort->bytes, tokens + probabilities);  // 268,697,600
    EXPECT_DOUBLE_EQ(unsort->bytes, tokens);                // 268,435,456
    EXPECT_EQ(sort->kind, OpKind::elementwise);
    EXPECT_EQ(sort->kernels, 1);
  }
  EXPECT_EQ(find(ops, "sort_by_expert", OpPass::backward_weight), nullptr);
}

TEST(MoeTokenSort, SortsSitBetweenTheAllToAllsAndTheExpertsInExecutionOrder) {
  const auto ops = moe_layer_ops(qwen3_30b(), layer_setup(qwen3_30b(), 1, 1, false, 16));
  auto index = [&](const std::string& name) {
    return std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.name == name; }) -
           ops.begin();
  };
  EXPECT_LT(index("permute"), index("sort_by_expert"));
  EXPECT_LT(index("sort_by_expert"), index("experts_up"));
  EXPECT_LT(index("experts_down"), index("unsort_by_expert"));
  EXPECT_LT(index("unsort_by_expert"), index("unpermute"));
  EXPECT_LT(index("unpermute.bwd"), index("unsort_by_expert.bwd"));
  EXPECT_LT(index("experts_up.dgrad"), index("sort_by_expert.bwd"));
}

TEST(MoeTokenSort, DeepepDeliversInExpertOrderAndRunsNoSort) {
  auto setup = layer_setup(qwen3_30b(), 1, 1, false, 16, false, MoeDispatcher::deepep);
  const auto ops = moe_layer_ops(qwen3_30b(), setup);
  EXPECT_EQ(find(ops, "sort_by_expert", OpPass::forward), nullptr);
  EXPECT_EQ(find(ops, "unsort_by_expert.bwd", OpPass::backward_input), nullptr);
  EXPECT_FALSE(sorts_by_local_expert(MoeDispatcher::deepep));
  EXPECT_TRUE(sorts_by_local_expert(MoeDispatcher::all_to_all));
}

TEST(MoeTokenSort, OneLocalExpertHasNothingToReorder) {
  // Mixtral 8x7B on EP 8: one expert per GPU.
  auto m = *find_model_preset("mixtral-8x7b");
  const auto ops = moe_layer_ops(m, layer_setup(m, 1, 1, false, 8));
  EXPECT_EQ(find(ops, "sort_by_expert", OpPass::forward), nullptr);
  EXPECT_TRUE(
      expert_sort_ops(MoeDispatcher::all_to_all, 1, 1000, 4096, OpPass::forward, SortSide::after_dispatch)
          .empty());
}

TEST(MoeTokenSort, ImbalancedRoutingScalesTheSortedRowsByTheLoad) {
  auto setup = layer_setup(qwen3_30b(), 1, 1, false, 16);
  setup.expert_load = 1.5;
  const auto ops = moe_layer_ops(qwen3_30b(), setup);
  EXPECT_DOUBLE_EQ(find(ops, "unsort_by_expert", OpPass::forward)->bytes, 1.5 * 32768.0 * 2048 * 4);
}

}  // namespace
}  // namespace trainsim::workloads
