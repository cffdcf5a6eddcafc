// trainsim against Megatron-Bridge's published Blackwell step times (dense
// Llama in FP8 on DGX B200 and GB200 NVL72, tests/fixtures/megatron_bridge_b200/,
// one row per file), replayed by `trainsim validate` on the
// scenarios/validation/mbridge-*.yaml templates. The fit rows (Llama 3 8B)
// chose the B200 profile's FP8 and MXFP8 GEMM peak fractions and the GB200
// profile's factor on them; the check rows (70B, 405B, and GB200's 8B MXFP8)
// did not (docs/calibration.md, "Blackwell").
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/validate_output.hpp"

namespace trainsim::testing {
namespace {

struct BlackwellRow {
  std::string csv;       // under tests/fixtures/ (megatron_bridge_b200/ unless it names its folder)
  std::string scenario;  // under scenarios/validation/
  std::string recipe;    // plan.fp8_recipe
};

// The signed error of the one row `trainsim validate` replayed (its table's
// last column), or NaN when the output has none.
double replay_error_percent(const BlackwellRow& row) {
  std::vector<std::string> args = {
      "validate",
      std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/" +
          (row.csv.find('/') == std::string::npos ? "megatron_bridge_b200/" + row.csv : row.csv),
      "--template",
      "scenarios/validation/" + row.scenario,
      "--set",
      "plan.precision=fp8",
      "--set",
      "plan.fp8_recipe=" + row.recipe,
      "--set",
      "plan.fp8_param_gather=true",
      "--allow-oom"};
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << row.csv << ": " << r.err << r.out;
  const double error = first_row_error_percent(r.out);
  EXPECT_FALSE(std::isnan(error)) << row.csv << ": no row in\n" << r.out;
  return error;
}

const std::vector<BlackwellRow> kFitRows = {
    {"dgx-b200_llama3_8b_fp8cs.csv", "mbridge-dgx-b200-llama3-8b.yaml", "current"},
    {"dgx-b200_llama3_8b_mxfp8.csv", "mbridge-dgx-b200-llama3-8b.yaml", "mxfp8"},
    {"gb200_llama3_8b_fp8cs.csv", "mbridge-gb200-llama3-8b.yaml", "current"},
};

// CI's check rows: every check row but GB200's 405B on 256 GPUs (minutes of
// CPU: 384 micro-batches through 64 model chunks; docs/calibration.md has it).
const std::vector<BlackwellRow> kCheckRows = {
    {"gb200_llama3_8b_mxfp8.csv", "mbridge-gb200-llama3-8b.yaml", "mxfp8"},
    {"gb200_llama3_70b_fp8cs.csv", "mbridge-gb200-llama3-70b-fsdp.yaml", "current"},
    {"gb200_llama3_70b_mxfp8.csv", "mbridge-gb200-llama3-70b.yaml", "mxfp8"},
    {"dgx-b200_llama3.1_405b_fp8cs.csv", "mbridge-dgx-b200-llama3.1-405b.yaml", "current"},
    {"dgx-b200_llama3.1_405b_mxfp8.csv", "mbridge-dgx-b200-llama3.1-405b.yaml", "mxfp8"},
};

// The fit rows were fitted to within 0.5%; the bound leaves a margin for
// platform-dependent floating point.
TEST(MegatronBridgeBlackwellValidation, FitRowsStayWithinOnePercent) {
  for (const auto& row : kFitRows)
    EXPECT_LE(std::abs(replay_error_percent(row)), 1.0) << row.csv;
}

// The check rows' MAPE and worst row as of the fit (docs/calibration.md,
// "Blackwell": 4.98% over these five rows, DGX B200's 405B FP8-CS -9.4%),
// plus a margin for platform-dependent floating point.
constexpr double kCheckMapePercent = 5.5;
constexpr double kWorstCheckRowPercent = 10.5;
// Every row within `worst_percent` and their mean absolute error within
// `mape_percent`.
void expect_within_mape(const std::vector<BlackwellRow>& rows, double mape_percent, double worst_percent) {
  double sum = 0;
  for (const auto& row : rows) {
    const double error = replay_error_percent(row);
    EXPECT_LE(std::abs(error), worst_percent) << row.csv;
    sum += std::abs(error);
  }
  EXPECT_LE(sum / rows.size(), mape_percent);
}

TEST(MegatronBridgeBlackwellValidation, CheckRowsStayWithinTheirMapeBound) {
  expect_within_mape(kCheckRows, kCheckMapePercent, kWorstCheckRowPercent);
}

// GB300 NVL72 (tests/fixtures/megatron_bridge_gb300/): GB200's curves with the
// FP8 / MXFP8 GEMMs and fused attention times one factor, fitted to the 8B
// FP8-CS row; the 8B MXFP8 and both 70B rows check it (GB300's 405B row, 256
// GPUs, is left to docs/calibration.md's command, as GB200's).
const std::vector<BlackwellRow> kGb300FitRows = {
    {"megatron_bridge_gb300/gb300_llama3_8b_fp8cs.csv", "mbridge-gb300-llama3-8b.yaml", "current"},
};
const std::vector<BlackwellRow> kGb300CheckRows = {
    {"megatron_bridge_gb300/gb300_llama3_8b_mxfp8.csv", "mbridge-gb300-llama3-8b.yaml", "mxfp8"},
    {"megatron_bridge_gb300/gb300_llama3_70b_fp8cs.csv", "mbridge-gb300-llama3-70b-fsdp.yaml", "current"},
    {"megatron_bridge_gb300/gb300_llama3_70b_mxfp8.csv", "mbridge-gb300-llama3-70b.yaml", "mxfp8"},
};

TEST(MegatronBridgeBlackwellValidation, Gb300FitRowStaysWithinOnePercent) {
  for (const auto& row : kGb300FitRows)
    EXPECT_LE(std::abs(replay_error_percent(row)), 1.0) << row.csv;
}

// As of the fit (docs/calibration.md, "GB300"): MAPE 4.04% over these
// three rows, worst +6.4% (70B MXFP8); bounds with a margin for platform-dependent
// floating point.
constexpr double kGb300CheckMapePercent = 4.6;
constexpr double kGb300WorstCheckRowPercent = 7.5;
TEST(MegatronBridgeBlackwellValidation, Gb300CheckRowsStayWithinTheirMapeBound) {
  expect_within_mape(kGb300CheckRows, kGb300CheckMapePercent, kGb300WorstCheckRowPercent);
}

// BF16 on GB200 NVL72 (tests/fixtures/dgxc_gb200/): NVIDIA's dgxc-benchmarking
// v25.05.01 published Llama 3.1 405B step times on 128-512 GB200 in BF16 and in
// FP8 for the same plan (TP 4, PP 8 x VP 8, CP 2; NeMo 25.04.01), the only dense
// BF16 Blackwell step times found. Nothing was fitted on them. The B200 / GB200
// BF16 GEMMs keep H100's peak fraction, so these rows check that assumption:
// as of 2026-12-06 (docs/calibration.md, "BF16 on GB200") trainsim runs the
// 128-GPU rows 18.3% (BF16) and 15.1% (FP8) fast, a release older than the
// Megatron-Bridge rows' (NeMo 25.04's 405B on 512 H100 reads 8.4% fast too),
// and its BF16 / FP8 step ratio is 1.468 against the published 1.525: BF16 on
// GB200 about 4% fast relative to its fitted FP8. CI replays the 128-GPU rows
// (about 11 s of CPU); the 256- and 512-GPU files run with the same command.
double dgxc_gb200_error_percent(const std::string& csv, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {
      "validate", std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/dgxc_gb200/" + csv, "--template",
      "scenarios/validation/dgxc-gb200-llama3.1-405b.yaml", "--allow-oom"};
  for (const auto& set : sets)
    args.insert(args.end(), {"--set", set});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << csv << ": " << r.err << r.out;
  const double error = first_row_error_percent(r.out);
  EXPECT_FALSE(std::isnan(error)) << csv << ": no row in\n" << r.out;
  return error;
}

TEST(MegatronBridgeBlackwellValidation, Gb200Bf16RowRunsFastAndItsFp8SpeedupShortOfThePublishedOne) {
  const double bf16 = dgxc_gb200_error_percent("gb200_llama3.1_405b_bf16_128gpus.csv", {});
  const double fp8 = dgxc_gb200_error_percent("gb200_llama3.1_405b_fp8_128gpus.csv",
                                              {"plan.precision=fp8", "plan.fp8_param_gather=true"});
  // The misses as measured (-18.3%, -15.1%), held within 1.5 points.
  EXPECT_NEAR(bf16, -18.3, 1.5);
  EXPECT_NEAR(fp8, -15.1, 1.5);
  // trainsim's BF16 / FP8 step ratio against the published 9.347 / 6.131 s:
  // (1 + bf16) / (1 + fp8) x 1.5245 = 1.468, short of it by 3.7%.
  const double ratio = (1 + bf16 / 100) / (1 + fp8 / 100) * (9.347 / 6.131);
  EXPECT_NEAR(ratio, 1.468, 0.015);
  EXPECT_LT(ratio, 9.347 / 6.131);
}

}  // namespace
}  // namespace trainsim::testing
