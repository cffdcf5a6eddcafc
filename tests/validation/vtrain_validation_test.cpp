// trainsim against vTrain's measurements (Megatron-DeepSpeed on A100s,
// tests/fixtures/vtrain_ground_truth_{multi,single}.csv): every row is
// replayed as a full simulation by `trainsim validate`, and the mean absolute
// percentage error must stay within the bound docs/calibration.md records.
// Only check rows run here: multi-node, the 3.6B and 39.1B models (the fit
// rows, 18.4B and 175B, calibrated the efficiency curves and run in
// vtrain_fit_validation_test.cpp); single-node, every other row.
#include <gtest/gtest.h>

#include <regex>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

// The bounds docs/calibration.md records: the MAPE measured when the curves
// were calibrated (8.24% multi-node, 7.90% single-node), plus a small margin
// for platform-dependent floating point.
constexpr double kCheckMapePercent = 8.5;
constexpr double kSingleNodeCheckMapePercent = 8.0;

double mape_of(const std::string& out, const std::string& set) {
  const std::regex line("MAPE " + set + R"(\s+([0-9.]+)% over ([0-9]+) rows)");
  std::smatch m;
  if (!std::regex_search(out, m, line))
    return -1;
  return std::stod(m[1]);
}

CliResult validate(const std::string& dataset, const std::string& subset) {
  return run_cli({"validate", dataset, "--subset", subset, "-j", "2"});
}

TEST(VtrainValidation, CheckRowsStayWithinTheirMapeBound) {
  const auto r = validate("tests/fixtures/vtrain_ground_truth_multi.csv", "check");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const double check = mape_of(r.out, "check");
  ASSERT_GE(check, 0) << r.out;
  EXPECT_NE(r.out.find("over 73 rows"), std::string::npos) << r.out;
  EXPECT_LE(check, kCheckMapePercent) << r.out;
}

// ground_truth_single.csv: small GPT models on one node of 2 to 8 A100s,
// where kernel shapes are small and the host's launch overhead matters.
TEST(VtrainValidation, SingleNodeCheckRowsStayWithinTheirMapeBound) {
  const auto r = validate("tests/fixtures/vtrain_ground_truth_single.csv", "check");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const double check = mape_of(r.out, "check");
  ASSERT_GE(check, 0) << r.out;
  EXPECT_NE(r.out.find("over 720 rows"), std::string::npos) << r.out;
  EXPECT_LE(check, kSingleNodeCheckMapePercent) << r.out;
}

}  // namespace
}  // namespace trainsim::testing
