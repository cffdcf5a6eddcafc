// Pipeline layouts with stages of no transformer layer, through the CLI
// (issue 34 item 1): plan.stage_layers with 0 entries, Megatron's split keys
// and their aliases, their errors, and a Llama-3-style interleaved layout
// (first chunk the embedding alone, last the output layer and loss alone)
// replayed end to end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {

std::vector<int> stage_layers_of(const nlohmann::json& summary) {
  return summary.at("plan").at("stage_layers").get<std::vector<int>>();
}

// Quickstart: GPT-3 1.3B (24 layers), tp 2 x pp 4 x dp 2 on 16 A100s.
TEST(PipelineLayoutCli, AFirstStageOfNoLayerRunsTheEmbeddingAloneWithItsMemory) {
  const auto out = fresh_dir("layout-zero");
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "--quiet", "--out", out.string(), "--set",
                          "plan.decoder_first_pipeline_num_layers=0"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(stage_layers_of(summary), (std::vector<int>{0, 8, 8, 8}));
  // Stage 0 (GPUs 0-3) holds the word and position embeddings, 52.5M
  // parameters per TP rank, at 16 bytes each (ZeRO 0): about 0.84 GB,
  // where a probe once read 0.03 GiB.
  for (const auto& gpu : summary.at("gpus")) {
    if (gpu.at("stage").get<int>() != 0)
      continue;
    EXPECT_GT(gpu.at("peak_memory_bytes").get<double>(), 16 * 52.4e6);
    EXPECT_LT(gpu.at("peak_memory_bytes").get<double>(), 1.5e9);
  }
  std::filesystem::remove_all(out);
}

TEST(PipelineLayoutCli, MegatronsSplitKeysAndTheirAliasesGiveItsLayouts) {
  // 22 layers + embedding + loss = 24 over pp 4: [5, 6, 6, 5].
  const auto accounted =
      run_summary({"run", "scenarios/quickstart.yaml", "--set", "model.layers=22", "--set",
                   "plan.account_for_embedding_in_pipeline_split=true", "--set", "plan.loss_in_split=true"});
  EXPECT_EQ(stage_layers_of(accounted), (std::vector<int>{5, 6, 6, 5}));
  const auto layout = run_summary({"run", "scenarios/quickstart.yaml", "--set",
                                   "plan.pipeline_model_parallel_layout=Et*5|t*6|(t*6|)*1,t*7L"});
  EXPECT_EQ(stage_layers_of(layout), (std::vector<int>{5, 6, 6, 7}));
  const auto ends = run_summary({"run", "scenarios/quickstart.yaml", "--set", "plan.first_stage_layers=4",
                                 "--set", "plan.decoder_last_pipeline_num_layers=4"});
  EXPECT_EQ(stage_layers_of(ends), (std::vector<int>{4, 8, 8, 4}));
}

TEST(PipelineLayoutCli, SplitsMegatronRefusesAreErrorsAtTheirKeys) {
  auto error_of = [](std::vector<std::string> sets) {
    std::vector<std::string> args = {"run", "scenarios/quickstart.yaml", "--quiet", "--out",
                                     fresh_dir("layout-bad").string()};
    for (auto& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 1) << r.err;
    return r.err;
  };
  const std::string indivisible = error_of({"plan.embedding_in_split=true", "plan.loss_in_split=true"});
  EXPECT_NE(indivisible.find("--set plan.embedding_in_split=true: plan.embedding_in_split: layers + 2 "
                             "(embedding and loss) = 26 is not divisible by pp = 4"),
            std::string::npos)
      << indivisible;
  const std::string both = error_of({"plan.stage_layers=[0,8,8,8]", "plan.first_stage_layers=0"});
  EXPECT_NE(both.find("plan.first_stage_layers: given with stage_layers"), std::string::npos) << both;
  const std::string layout = error_of({"plan.pipeline_layout=Et*12|t*12"});
  EXPECT_NE(layout.find("lists 2 virtual stages, but pp x virtual_stages = 4 x 1 = 4"), std::string::npos)
      << layout;
  const std::string mtp = error_of({"plan.pipeline_layout=Et*6|t*6|t*6|t*6mL"});
  EXPECT_NE(mtp.find("multi-token-prediction"), std::string::npos) << mtp;
}

// Llama 3's layout in small: 24 layers on pp 2 x 13 chunks, the embedding
// and the loss counted as layers, so chunk 0 holds the embedding alone and
// the last the output layer and loss alone; interleaved, async p2p (Meta's
// isend / irecv; the schedule's default is Megatron's overlap since
// 2026-12-05). The 0-layer chunks still pass activations on.
TEST(PipelineLayoutCli, AnInterleavedPipelineWithEmbeddingAndLossChunksReplays) {
  const auto summary = run_summary({"run", "scenarios/quickstart.yaml", "--set", "plan.pp=2", "--set",
                                    "plan.dp=auto", "--set", "plan.schedule=interleaved_1f1b", "--set",
                                    "plan.virtual_stages=13", "--set", "plan.embedding_in_split=true",
                                    "--set", "plan.loss_in_split=true", "--set", "plan.p2p=async"});
  const auto layers = stage_layers_of(summary);
  ASSERT_EQ(layers.size(), 26u);
  EXPECT_EQ(layers.front(), 0);
  EXPECT_EQ(layers.back(), 0);
  EXPECT_EQ(std::count(layers.begin(), layers.end(), 1), 24);
  EXPECT_EQ(summary.at("plan").at("p2p"), "async");
  EXPECT_GT(summary.at("iteration_time_s").get<double>(), 0.5);
}

}  // namespace
}  // namespace trainsim::testing
