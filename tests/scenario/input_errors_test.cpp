// Bad input through the real CLI: one clear message naming the file, the line,
// the key and the bad value; exit status 1; nothing from SimGrid.
#include <gtest/gtest.h>

#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {

const std::string& kGood = kSmallPipelineScenario;

TEST(InputErrors, GoodScenarioRuns) {
  EXPECT_EQ(run_text(kGood).status, 0);
}

TEST(InputErrors, UnknownKey) {
  expect_one_error(run_text(with(kGood, "  pp: 4\n", "  pp: 4\n  ppp: 4\n")), "12:", "plan.ppp",
                   "unknown key");
}

TEST(InputErrors, MissingUnit) {
  expect_one_error(run_text(with(kGood, "200Gbps", "200")), "5:", "cluster.nic.bandwidth", "unit is missing");
}

TEST(InputErrors, NegativeSize) {
  expect_one_error(run_text(with(kGood, "200Gbps", "-200Gbps")), "5:", "cluster.nic.bandwidth",
                   "is negative");
  expect_one_error(run_text(with(kGood, "nodes: 2", "nodes: -2")), "3:", "cluster.nodes",
                   "-2 is out of range");
}

TEST(InputErrors, ParallelDegreesMustMultiplyToTheGpuCount) {
  expect_one_error(run_text(with(kGood, "dp: 2", "dp: 4")), "9:", "plan.dp",
                   "dp x tp x pp = 4 x 2 x 4 = 32 GPUs, but the cluster has 16");
}

TEST(InputErrors, GlobalBatchMustDivideByMicroBatchTimesDp) {
  expect_one_error(run_text(with(kGood, "global_batch_size: 16", "global_batch_size: 15")),
                   "13:", "plan.global_batch_size",
                   "15 is not divisible by micro_batch_size x dp = 1 x 2 = 2");
}

TEST(InputErrors, LayersMustDivideByPp) {
  expect_one_error(run_text(with(with(with(kGood, "pp: 4", "pp: 16"), "dp: 2", "dp: 1"), "tp: 2", "tp: 1")),
                   "11:", "plan.pp", "model.layers = 24 is not divisible by pp = 16");
}

TEST(InputErrors, BadOverrideNamesTheOption) {
  const auto path = write_temp_file("scenario.yaml", kGood);
  const auto r = run_cli({"run", path.string(), "-q", "--set", "cluster.nvlink.latency=fast"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--set cluster.nvlink.latency=fast: cluster.nvlink.latency: 'fast' is not a latency"),
            std::string::npos)
      << r.err;
}

TEST(InputErrors, MissingFile) {
  const auto r = run_cli({"run", "no/such/scenario.yaml"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no/such/scenario.yaml: cannot open"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::testing
