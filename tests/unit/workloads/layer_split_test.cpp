// Megatron-LM's ways of asking for a pipeline partition, against what
// Megatron-core's get_num_layers_to_build and PipelineParallelLayerLayout
// build for the same arguments.
#include <gtest/gtest.h>

#include <numeric>

#include "workloads/layer_split.hpp"

namespace trainsim::workloads {
namespace {

std::vector<int> repeated(std::initializer_list<std::pair<int, int>> runs) {
  std::vector<int> out;
  for (auto [value, count] : runs)
    out.insert(out.end(), static_cast<std::size_t>(count), value);
  return out;
}

LayerSplitRequest accounted(bool embedding, bool loss) {
  LayerSplitRequest r;
  r.embedding_in_split = embedding;
  r.loss_in_split = loss;
  return r;
}

// Llama 3 405B (126 layers) on pp 16: Megatron's --account-for-embedding-
// in-pipeline-split --account-for-loss-in-pipeline-split splits 128 "layers"
// evenly and builds one fewer on the first and the last virtual stage.
TEST(LayerSplit, EmbeddingAndLossInTheSplitGiveLlama3sLayout) {
  const LayerSplit one = split_layers(accounted(true, true), 126, 16, 8);
  ASSERT_TRUE(one.problems.empty());
  EXPECT_EQ(one.stage_layers, repeated({{0, 1}, {1, 126}, {0, 1}}));
  const LayerSplit two = split_layers(accounted(true, true), 126, 16, 4);
  ASSERT_TRUE(two.problems.empty());
  EXPECT_EQ(two.stage_layers, repeated({{1, 1}, {2, 62}, {1, 1}}));
  const LayerSplit loss_only = split_layers(accounted(false, true), 31, 4, 1);
  ASSERT_TRUE(loss_only.problems.empty());
  EXPECT_EQ(loss_only.stage_layers, (std::vector<int>{8, 8, 8, 7}));
}

TEST(LayerSplit, UnevenSplitsThatMegatronRefusesAreProblemsAtTheKey) {
  const LayerSplit bad = split_layers(accounted(true, true), 126, 16, 3);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_EQ(bad.problems[0].key, "plan.embedding_in_split");
  EXPECT_NE(bad.problems[0].message.find("128 is not divisible by pp x virtual_stages = 48"),
            std::string::npos)
      << bad.problems[0].message;
  EXPECT_TRUE(bad.stage_layers.empty());
}

// --decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 6
// on 36 layers, pp 4: the middle ranks share 24; with 2 chunks each rank's
// layers split over its chunks, virtual stage vs on rank vs % pp.
TEST(LayerSplit, FirstAndLastRankLayersSplitTheRestEvenly) {
  LayerSplitRequest r;
  r.first_stage_layers = 6;
  r.last_stage_layers = 6;
  EXPECT_EQ(split_layers(r, 36, 4, 1).stage_layers, (std::vector<int>{6, 12, 12, 6}));
  EXPECT_EQ(split_layers(r, 36, 4, 2).stage_layers, (std::vector<int>{3, 6, 6, 3, 3, 6, 6, 3}));
  r.last_stage_layers.reset();
  r.first_stage_layers = 0;
  EXPECT_EQ(split_layers(r, 24, 4, 1).stage_layers, (std::vector<int>{0, 8, 8, 8}));
  r.first_stage_layers = 5;
  const LayerSplit bad = split_layers(r, 24, 4, 1);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_EQ(bad.problems[0].key, "plan.first_stage_layers");
  EXPECT_NE(bad.problems[0].message.find("leaves 19 layers for the other 3 ranks"), std::string::npos)
      << bad.problems[0].message;
}

TEST(LayerSplit, MegatronsOwnExclusionsAreProblems) {
  LayerSplitRequest r = accounted(true, false);
  r.first_stage_layers = 4;
  const LayerSplit both = split_layers(r, 24, 4, 1);
  ASSERT_EQ(both.problems.size(), 1u);
  EXPECT_EQ(both.problems[0].key, "plan.first_stage_layers");
  LayerSplitRequest layout;
  layout.pipeline_layout = "Et|tL";
  layout.loss_in_split = true;
  const LayerSplit with_layout = split_layers(layout, 2, 2, 1);
  ASSERT_EQ(with_layout.problems.size(), 1u);
  EXPECT_EQ(with_layout.problems[0].key, "plan.pipeline_layout");
}

// Megatron's parse_str_to_list examples: "Ettt|(tt|)*29,m|L" unrolls groups,
// then characters; commas are cosmetic.
TEST(LayerSplit, LayoutStringsUnrollAsMegatronsParser) {
  LayerSplitRequest r;
  r.pipeline_layout = "E|(t|)*126,L";
  const LayerSplit llama = split_layers(r, 126, 16, 0);
  ASSERT_TRUE(llama.problems.empty()) << llama.problems[0].message;
  EXPECT_EQ(llama.stage_layers, repeated({{0, 1}, {1, 126}, {0, 1}}));
  EXPECT_EQ(layout_stage_count("E|(t|)*126,L"), 128);
  r.pipeline_layout = "Et*3|(tt|)*2,t*2L";
  EXPECT_EQ(split_layers(r, 9, 2, 2).stage_layers, (std::vector<int>{3, 2, 2, 2}));
}

TEST(LayerSplit, LayoutsTrainsimCannotRunNameWhatIsWrong) {
  const auto message = [](const std::string& layout, int layers, int pp, int v) {
    LayerSplitRequest r;
    r.pipeline_layout = layout;
    const LayerSplit split = split_layers(r, layers, pp, v);
    EXPECT_TRUE(split.stage_layers.empty()) << layout;
    return split.problems.empty() ? std::string() : split.problems[0].message;
  };
  EXPECT_NE(message("Et|tL", 3, 2, 1).find("holds 2 transformer layers ('t'), but model.layers is 3"),
            std::string::npos);
  EXPECT_NE(message("tE|tL", 2, 2, 1).find("'E' in virtual stage 0"), std::string::npos);
  EXPECT_NE(message("Et|t|mL", 2, 3, 1).find("multi-token-prediction"), std::string::npos);
  EXPECT_NE(message("Et|tx|L", 2, 3, 1).find("'x' is not a layer"), std::string::npos);
  EXPECT_NE(message("Et|tL", 2, 2, 2).find("lists 2 virtual stages, but pp x virtual_stages = 2 x 2 = 4"),
            std::string::npos);
  EXPECT_NE(message("E(t|L", 1, 2, 1).find("never closed"), std::string::npos);
  EXPECT_NE(message("Et|t*|L", 2, 3, 1).find("not followed by a count"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::workloads
