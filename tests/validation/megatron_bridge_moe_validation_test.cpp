// trainsim against Megatron-Bridge's published MoE step times on DGX H100
// (Qwen3-30B-A3B, tests/fixtures/megatron_bridge_moe/, one row per file),
// replayed by `trainsim validate` on the scenarios/validation/mbridge-h100-qwen3-*
// templates. Nothing was fitted to them. The 26.02.01 PP 2 row is within the
// issue's 20%; the EP 16 row and the 25.11 PP 2 row (a release that ran the
// layout 1.77x slower than 26.02.01 did) are missed (docs/calibration.md "MoE
// on H100"): the test holds each row to its error, so that a change to the
// MoE model shows here and in the docs together.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/validate_output.hpp"

namespace trainsim::testing {
namespace {

double replay_error_percent(const std::string& csv, const std::string& scenario, bool allow_oom) {
  std::vector<std::string> args = {
      "validate", std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_bridge_moe/" + csv,
      "--template", std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/" + scenario};
  if (allow_oom)
    args.push_back("--allow-oom");
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
  EXPECT_NEAR(
      replay_error_percent("h100_qwen3_30b_a3b_fp8cs_pp2.csv", "mbridge-h100-qwen3-30b-a3b-pp2.yaml", true),
      -50.8, 2.0);
}

TEST(MegatronBridgeMoeValidation, Qwen3PipelinedRowOf26_02_01IsWithinTwentyPercent) {
  const double error = replay_error_percent("h100_qwen3_30b_a3b_fp8_pp2_vp12.csv",
                                            "mbridge-h100-qwen3-30b-a3b-pp2-vp12.yaml", false);
  EXPECT_LT(std::abs(error), 20.0);
  EXPECT_NEAR(error, -14.8, 2.0);
}

}  // namespace
}  // namespace trainsim::testing
