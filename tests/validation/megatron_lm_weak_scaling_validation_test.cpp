// trainsim against Megatron-LM's published weak scaling of GPT models on H100
// (README "Training Speed and Scalability", images/model_table.png;
// tests/fixtures/megatron_lm_weak_scaling.csv, which gives the source, the
// derived columns and every assumption beside its row). No trainsim constant
// was fitted to these rows. CI replays the rows without a pipeline (48 to
// 384 GPUs); every row is the command in docs/calibration.md ("Megatron-LM
// weak scaling"), not a test: too long for CI.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "support/cli.hpp"
#include "support/files.hpp"

namespace trainsim::testing {
namespace {

// The rows of at most `max_gpus` GPUs, in a file of their own.
std::filesystem::path rows_up_to(int max_gpus, int& rows) {
  std::ifstream in(std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_lm_weak_scaling.csv");
  std::stringstream kept;
  std::string line;
  rows = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#' && line.rfind("Parameters", 0) != 0) {
      const int gpus = std::stoi(line.substr(line.find(',') + 1));
      if (gpus > max_gpus)
        continue;
      ++rows;
    }
    kept << line << '\n';
  }
  const auto path = fresh_dir("megatron-lm-weak-scaling") / "rows.csv";
  std::ofstream(path) << kept.str();
  return path;
}

double mape_of(const std::string& out, int rows) {
  const std::regex line(R"(MAPE check\s+([0-9.]+)% over )" + std::to_string(rows) + " rows");
  std::smatch m;
  return std::regex_search(out, m, line) ? std::stod(m[1]) : -1;
}

// Measured on 2026-12-05 (docs/calibration.md), with the README's
// --overlap-param-gather modelled (plan.overlap_param_gather): 1.7B +9.7%,
// 7.1B +7.8%, 16B +2.5%, 32B -7.5% in MFU under Megatron's own FLOP count
// (mfu_nvidia), MAPE 6.87% (7.07% on 2026-12-04, when the gather was
// charged after the optimizer step and 32B was -12.0%); the bound adds a
// margin for platform-dependent floating point. Every row is within the
// issue's 10%.
TEST(MegatronLmWeakScalingValidation, RowsWithoutAPipelineStayWithinTheirMapeBound) {
  int rows = 0;
  const auto file = rows_up_to(384, rows);
  ASSERT_EQ(rows, 4);
  const auto r = run_cli({"validate", file.string(), "--template",
                          "scenarios/validation/megatron-lm-h100-weak-scaling.yaml", "-j", "2", "--metric",
                          "mfu_nvidia"});
  std::filesystem::remove_all(file.parent_path());
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const double mape = mape_of(r.out, rows);
  ASSERT_GE(mape, 0) << r.out;
  EXPECT_LE(mape, 7.0) << r.out;  // 7.07 without the overlapped gather
  EXPECT_GE(mape, 6.7) << r.out;  // a large drop means the model moved: update the figures
}

// The 177B model at 96 GPUs (tests/fixtures/megatron_lm_weak_scaling_177b_dp2.csv,
// the README's strong-scaling point where the bubble and DP cost nothing):
// measured 2026-12-06, 54.24% against the published 47% (+15.4%; about
// +16.8% at the published m = 576). The pipelined weak-scaling rows' gap
// (+12% to +18%) is there already, so it is not the chunk count
// (docs/calibration.md, "Where the pipelined rows' time goes"). The bounds
// catch the figure moving either way: a fix of the gap must update them.
TEST(MegatronLmWeakScalingValidation, Model177bAtDp2ReadsAboutFifteenPercentFastOfItsSteadyState) {
  const auto r = run_cli({"validate", "tests/fixtures/megatron_lm_weak_scaling_177b_dp2.csv", "--template",
                          "scenarios/validation/megatron-lm-h100-weak-scaling.yaml", "-j", "1", "--metric",
                          "mfu_nvidia"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const double mape = mape_of(r.out, 1);
  ASSERT_GE(mape, 0) << r.out;
  EXPECT_LE(mape, 16.0) << r.out;
  EXPECT_GE(mape, 14.8) << r.out;
  // Fast, not slow: measured 47.0, predicted 53.x-54.x, a positive error.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(47\.0\s+5[34]\.[0-9]\s+\+1)"))) << r.out;
}

}  // namespace
}  // namespace trainsim::testing
