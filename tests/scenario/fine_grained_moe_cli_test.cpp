// Fine-grained MoE through the real CLI (issue 33): multi-head latent
// attention and multi-token prediction run end to end and are reported in
// summary.json; bad combinations exit 1 with one error naming file, line
// and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_summary.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// DeepSeek-V2-Lite's MLA and experts, 4 layers, on one 8-GPU node: pp 2,
// dp 4, ep 4, one MTP module.
const std::string kMla = R"(cluster:
  gpu: H100-SXM
  nodes: 1
  gpus_per_node: 8
model:
  preset: deepseek-v2-lite
  layers: 4
  seq_len: 1024
  mtp_depth: 1
plan:
  pp: 2
  dp: 4
  expert_parallel: 4
  micro_batch_size: 1
  global_batch_size: 16
)";

TEST(FineGrainedMoeCli, MlaModelWithMtpRunsAndReportsItsShape) {
  const auto out = fresh_dir("mla-mtp");
  const auto r = run_text(kMla, out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(read_file(out / "summary.json"));
  const auto& model = summary["model"];
  EXPECT_EQ(model["attention"], "mla");
  EXPECT_EQ(model["mla"]["q_lora_rank"], 0);
  EXPECT_EQ(model["mla"]["kv_lora_rank"], 512);
  EXPECT_EQ(model["mtp_depth"], 1);
  EXPECT_GT(model["mtp_parameters"].get<double>(), 0.5e9);
  // The last stage runs the MTP module's MoE layer and output head besides
  // its two MoE layers: it computes more than the first (the embedding, a
  // dense and a MoE layer).
  const auto& stages = summary["stages"];
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_GT(stages[1]["compute_fraction"].get<double>(), stages[0]["compute_fraction"].get<double>());
  fs::remove_all(out);
}

TEST(FineGrainedMoeCli, MlaKeyOnAMultiHeadModelIsOneErrorAtItsLine) {
  expect_one_error(
      run_text(with(kMla, "  mtp_depth: 1\n", "  mtp_depth: 1\n  attention: mha\n  v_head_dim: 64\n")),
      "11:", "model.v_head_dim", "attention: mla");
}

TEST(FineGrainedMoeCli, MlaWithATensorParallelDegreeThatDoesNotDivideTheHeadsIsRefused) {
  // 16 heads over tp 3 (pp 2 x tp 3 on a 6-GPU node).
  const std::string yaml =
      with(with(with(kMla, "  dp: 4\n", "  dp: 1\n  tp: 3\n"), "gpus_per_node: 8", "gpus_per_node: 6"),
           "  expert_parallel: 4\n", "");
  expect_one_error(run_text(yaml), "13:", "plan.tp", "latent attention");
}

}  // namespace
}  // namespace trainsim::testing
