// The fit rows of vTrain's multi-node measurements (18.4B on 256 A100s and
// 175B on 512, tests/fixtures/vtrain_ground_truth_multi.csv): the rows the
// A100 efficiency curves were calibrated on, replayed by `trainsim
// validate`. Slow (the 175B rows run up to 384 micro-batches on 512 GPUs),
// hence the `slow` label besides `validation`.
#include <gtest/gtest.h>

#include <regex>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

// The bound docs/calibration.md records: 2.99% measured, plus a small margin
// for platform-dependent floating point.
constexpr double kFitMapePercent = 3.5;

TEST(VtrainValidation, FitRowsStayWithinTheirMapeBound) {
  const auto r =
      run_cli({"validate", "tests/fixtures/vtrain_ground_truth_multi.csv", "--subset", "fit", "-j", "2"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const std::regex line(R"(MAPE fit\s+([0-9.]+)% over 36 rows)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
  EXPECT_LE(std::stod(m[1]), kFitMapePercent) << r.out;
}

}  // namespace
}  // namespace trainsim::testing
