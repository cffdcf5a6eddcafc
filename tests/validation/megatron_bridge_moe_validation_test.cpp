// trainsim against Megatron-Bridge's published MoE step times on DGX H100
// (Qwen3-30B-A3B, tests/fixtures/megatron_bridge_moe/, one row per file),
// replayed by `trainsim validate` on the scenarios/validation/mbridge-h100-qwen3-*
// templates, each set as its release's recipe was (the fixtures' README cites
// the commits). Nothing was fitted to them. The FP8 dropless rows are missed
// (docs/calibration.md "MoE on H100"): the test holds each row to its error,
// so that a change to the MoE model shows here and in the docs together. The
// 25.11 PP 2 row measures a release NVIDIA's own issue calls 2x slow
// (Megatron-Bridge issue #1998); the 26.02.01 row's figure most likely
// measures the EP 16 recipe under the older layout columns (README). The BF16
// runs of the same layout that Megatron-Bridge's docs record (alltoall with
// and without EP overlap, HybridEP with it) and the 25.09 token-drop row of
// the PP 2 layout are check rows too: they place the FP8 dropless rows'
// missing time outside the per-op GPU model (docs/calibration.md, "MoE on
// H100", "Where the EP 16 row's time goes").
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/validate_output.hpp"

namespace trainsim::testing {
namespace {

double replay_error_percent(const std::string& csv, const std::string& scenario, bool allow_oom,
                            const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args = {
      "validate", std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_bridge_moe/" + csv,
      "--template", std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/" + scenario};
  if (allow_oom)
    args.push_back("--allow-oom");
  for (const auto& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << csv << ": " << r.err << r.out;
  const double error = first_row_error_percent(r.out);
  EXPECT_FALSE(std::isnan(error)) << csv << ": no row in\n" << r.out;
  return error;
}

TEST(MegatronBridgeMoeValidation, Qwen3RowsAreHeldToTheirKnownError) {
  EXPECT_NEAR(
      replay_error_percent("h100_qwen3_30b_a3b_fp8_ep16.csv", "mbridge-h100-qwen3-30b-a3b.yaml", false),
      -26.9, 2.0);
  // The 25.11 recipe (tag v0.2.0): VP 12, MBS 1, alltoall, EP A2A overlap
  // with delay_wgrad_compute (-53.8% before the deferral was modelled).
  // It fits in memory (the table's VP 24 / MBS 2 needed --allow-oom).
  EXPECT_NEAR(
      replay_error_percent("h100_qwen3_30b_a3b_fp8cs_pp2.csv", "mbridge-h100-qwen3-30b-a3b-pp2.yaml", false),
      -57.3, 2.0);
}

// The 26.02.01 row as published (PP 2, VP 12, EP 8) with that layout's recipe
// (tag v0.3.0: DeepEP, EP A2A overlap with delay_wgrad_compute): -32.8%
// (-28.8% before the deferral was modelled).
TEST(MegatronBridgeMoeValidation, Qwen3PipelinedRowOf26_02_01IsHeldToItsKnownError) {
  EXPECT_NEAR(replay_error_percent("h100_qwen3_30b_a3b_fp8_pp2_vp12.csv",
                                   "mbridge-h100-qwen3-30b-a3b-pp2-vp12.yaml", false),
              -32.8, 2.0);
}

// Read as the recipe the release branch held when the 26.02.01 figures were
// taken (EP 16, HybridEP, no EP overlap: the 26.04.01 row's template, the
// same GPUs and GBS), the row's 28,940.6 ms against the EP 16 replay.
TEST(MegatronBridgeMoeValidation, Qwen3Row26_02_01ReadAsTheEp16RecipeIsHeldToItsKnownError) {
  const double ep16_error =
      replay_error_percent("h100_qwen3_30b_a3b_fp8_ep16.csv", "mbridge-h100-qwen3-30b-a3b.yaml", false);
  const double predicted_ms = 29257.1 * (1.0 + ep16_error / 100.0);
  EXPECT_NEAR(100.0 * (predicted_ms / 28940.6 - 1.0), -26.1, 2.0);
}

// Megatron-Bridge's docs (docs/training/communication-overlap.md and
// moe-optimization.md at the fixtures' commit): the 16-GPU BF16 recipe with
// the alltoall dispatcher, 41.25 s without EP overlap and 31.31 s with it,
// and with HybridEP and EP overlap, 20.147 s. Without overlap trainsim's
// GPU time plus its NCCL all-to-all lands within 2%; the overlapped rows
// bracket the FP8 EP 16 row's layout from both sides.
TEST(MegatronBridgeMoeValidation, Bf16AlltoallRowWithoutOverlapIsWithinFivePercent) {
  const double error = replay_error_percent("h100_qwen3_30b_a3b_bf16_alltoall_ep16.csv",
                                            "mbridge-h100-qwen3-30b-a3b-bf16-alltoall.yaml", false);
  EXPECT_LT(std::abs(error), 5.0);
  EXPECT_NEAR(error, -1.9, 1.0);
}

TEST(MegatronBridgeMoeValidation, Bf16OverlappedRowsAreHeldToTheirKnownError) {
  EXPECT_NEAR(replay_error_percent("h100_qwen3_30b_a3b_bf16_alltoall_ep16_overlap.csv",
                                   "mbridge-h100-qwen3-30b-a3b-bf16-alltoall.yaml", true,
                                   {"plan.moe_a2a_overlap=true"}),
              -14.1, 1.5);
  EXPECT_NEAR(replay_error_percent("h100_qwen3_30b_a3b_bf16_hybridep_ep16_overlap.csv",
                                   "mbridge-h100-qwen3-30b-a3b-bf16-hybridep-overlap.yaml", true),
              8.9, 1.5);
}

// The 25.09 token-drop row (recipe: branch r0.1.0, PP 2, VP 12, EP 8, MBS 2,
// capacity factor 1.0 with padding): static shapes, no per-layer host
// synchronisation. It lands where the dropless rows of the same layout do
// not (25.11: -53.8%).
TEST(MegatronBridgeMoeValidation, Qwen3TokenDropRowOf25_09IsWithinFivePercent) {
  const double error = replay_error_percent("h100_qwen3_30b_a3b_fp8_tokendrop_pp2.csv",
                                            "mbridge-h100-qwen3-30b-a3b-pp2-tokendrop.yaml", true);
  EXPECT_LT(std::abs(error), 5.0);
  EXPECT_NEAR(error, -4.1, 1.0);
}

}  // namespace
}  // namespace trainsim::testing
