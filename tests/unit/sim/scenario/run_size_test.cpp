#include "sim/scenario/run_size.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {
namespace {

Scenario shipped(const std::string& file, const std::vector<std::string>& overrides = {}) {
  return load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/" + file, overrides);
}

constexpr int kFoldFrom = 4096;  // sim::kFoldByDefaultGpus, what `run` passes without --fold / --no-fold
constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(RunSize, AFoldedRunIsEstimatedAtWhatTheFoldHoldsNotAtEveryExpandedRecord) {
  // scenarios/scale-16k-hsdp-70b.yaml: 8.4e7 flows written; unfolded its
  // estimate (19.7 GiB) refused it on the 24 GiB machine. Folded, one class's
  // records are held: measured 0.29 and 0.83 GiB with 2 and 8 of its 80
  // layers, so ~7.2 GiB at 80 (docs/performance.md, "The fold").
  const Scenario s = shipped("scenarios/scale-16k-hsdp-70b.yaml");
  const RunSize full = estimate_run_size(s, 1, 0);
  const RunSize folded = estimate_run_size(s, 1, kFoldFrom);
  EXPECT_FALSE(full.folded);
  EXPECT_TRUE(folded.folded);
  EXPECT_EQ(folded.records, full.records);  // the same outputs are written
  EXPECT_EQ(folded.flows, full.flows);
  EXPECT_GT(full.memory_bytes / kGiB, 16);
  EXPECT_GT(folded.memory_bytes / kGiB, 6);
  EXPECT_LT(folded.memory_bytes / kGiB, 10);
}

TEST(RunSize, TheFoldIsNotExpectedBelowItsThresholdNorWithAPerturbedGpu) {
  const Scenario small = shipped("scenarios/scale-512.yaml");
  EXPECT_FALSE(estimate_run_size(small, 1, kFoldFrom).folded);  // 512 GPUs
  EXPECT_TRUE(estimate_run_size(small, 1, 1).folded);           // --fold
  const Scenario slow =
      shipped("scenarios/scale-512.yaml", {"perturbations.slow_gpus=[{stages: 0, dp_rank: 0, speed: 0.8}]"});
  EXPECT_FALSE(estimate_run_size(slow, 1, 1).folded);
}

}  // namespace
}  // namespace trainsim::scenario
