// trainsim against Megatron-Bridge's published DeepSeek-V3 step times on 256
// GB200s (tests/fixtures/megatron_bridge_moe/gb200_deepseek_v3_mxfp8.csv),
// replayed by `trainsim validate` on scenarios/validation/mbridge-gb200-deepseek-v3.yaml,
// on 1,024 H100s (h100_deepseek_v3_fp8.csv), replayed shrunk to 512 GPUs
// on scenarios/validation/mbridge-h100-deepseek-v3.yaml, on 256 DGX B200s
// (b200_deepseek_v3_mxfp8.csv, scenarios/validation/mbridge-dgx-b200-deepseek-v3.yaml),
// and Qwen3-235B-A22B on 256 H100s at GBS 2048
// (h100_qwen3_235b_a22b_fp8cs_gbs2048.csv, scenarios/validation/mbridge-h100-qwen3-235b-a22b.yaml).
// Replays of minutes (the Qwen3 row tens of CPU-minutes),
// so labelled slow. Nothing was fitted to it; trainsim is
// slow on it (docs/calibration.md, "MoE on H100" and below): the test holds
// the row to its error so that a change to the MoE model shows here. Since
// 2026-12-06 the templates follow the recipes' layouts, recompute modules
// and (GB200) overlap_grad_reduce with EP: +32.1% became +23.4% on GB200,
// +27.7% became +25.7% on H100. Since 2026-12-06 (second session) they set
// the recipes' group-limited routing (router_num_groups 8,
// router_group_topk 4), and the B200 one its recipe's recompute_modules and
// overlap_grad_reduce, and the GB200 one its recipe's EP A2A overlap: B200
// +24.2% -> +16.5%, H100 +25.7% -> +15.4%, GB200 +23.4% -> +23.3% (groups)
// -> +15.3% (overlap). Since the third session the H100 one sets its 25.09
// recipe's EP A2A overlap (branch r0.1.0): +15.4% -> +4.4%. Since the fourth
// the B200 and GB200 ones set their recipes' delay_wgrad_compute (the MoE
// layers' weight gradients beside their all-to-alls): B200 +16.5% -> +3.9%,
// GB200 +15.3% -> +10.8%, and the H100 one its 25.09 recipe's: +4.4% -> -6.0%.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "support/cli.hpp"
#include "support/run_summary.hpp"
#include "support/validate_output.hpp"

namespace trainsim::testing {
namespace {

// The 26.08 row (4,912 tokens/s per GPU on 256 GB200s, GBS 4096: 13.342 s a
// step) as its recipe runs it, with EP A2A overlap and delayed weight
// gradients: about 3-4.5 CPU-minutes and 1.9 GB, so on demand
// (TRAINSIM_FULL_SIZE_TESTS=1).
TEST(MegatronBridgeMoeLargeValidation, DeepSeekV3OnGb200WithEpOverlapIsHeldToItsKnownError) {
  if (std::getenv("TRAINSIM_FULL_SIZE_TESTS") == nullptr)
    GTEST_SKIP() << "a 4.5-CPU-minute replay: set TRAINSIM_FULL_SIZE_TESTS=1 to run it";
  const auto r = run_cli(
      {"validate",
       std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_bridge_moe/gb200_deepseek_v3_mxfp8.csv",
       "--template",
       std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-gb200-deepseek-v3.yaml",
       "--allow-oom"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NEAR(first_row_error_percent(r.out), 10.8, 2.0) << r.out;
}

// The same row without the EP overlap (the template until 2026-12-06's second
// session), and so without the deferral that needs it: about 1 CPU-minute,
// the CI guard of the MoE model at this size.
TEST(MegatronBridgeMoeLargeValidation, DeepSeekV3OnGb200WithoutEpOverlapIsHeldToItsKnownError) {
  const auto r = run_cli(
      {"validate",
       std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_bridge_moe/gb200_deepseek_v3_mxfp8.csv",
       "--template",
       std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-gb200-deepseek-v3.yaml", "--set",
       "plan.moe_a2a_overlap=false", "--set", "plan.delay_wgrad_compute=false", "--allow-oom"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NEAR(first_row_error_percent(r.out), 23.3, 2.0) << r.out;
}

// The 25.09 row (1,297 tokens/s per GPU on 1,024 H100s, GBS 8192: 25.2645 s a
// step) replayed at DP 32 instead of 64 (512 GPUs, GBS 4096: the same 128
// micro-batches per pipeline, the same EP 64 groups and pipelines; the full
// run needs more memory than the build machine lends one test). It fits
// (64.1 GiB at the peak, the optimizer state sharded over half the GPUs);
// --allow-oom kept for variants that do not.
// The 25.09 recipe (branch r0.1.0, run_script.py) runs the EP A2A overlap with
// delay_wgrad_compute on H100; the template sets both: -6.0% (+4.4% with the
// overlap alone; about 3 CPU-minutes, 1.8 GB, so on demand).
TEST(MegatronBridgeMoeLargeValidation, DeepSeekV3OnH100ShrunkToDp32WithEpOverlapIsHeldToItsKnownError) {
  if (std::getenv("TRAINSIM_FULL_SIZE_TESTS") == nullptr)
    GTEST_SKIP() << "a 3.4-CPU-minute replay: set TRAINSIM_FULL_SIZE_TESTS=1 to run it";
  const auto summary = run_summary(
      {"run", std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-h100-deepseek-v3.yaml",
       "--set", "cluster.nodes=64", "--set", "plan.dp=32", "--set", "plan.global_batch_size=4096",
       "--allow-oom"});
  ASSERT_TRUE(summary.contains("iteration_time_s"));
  const double published_s = 8192.0 * 4096 / (1297.0 * 1024);
  const double error = (summary["iteration_time_s"].get<double>() / published_s - 1) * 100;
  EXPECT_NEAR(error, -6.0, 2.0);
}

// Without the overlap (the template before the 25.09 recipe was read), and so
// without the deferral that needs it: +15.4%.
TEST(MegatronBridgeMoeLargeValidation, DeepSeekV3OnH100ShrunkToDp32WithoutEpOverlapIsHeldToItsKnownError) {
  const auto summary = run_summary(
      {"run", std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-h100-deepseek-v3.yaml",
       "--set", "cluster.nodes=64", "--set", "plan.dp=32", "--set", "plan.global_batch_size=4096", "--set",
       "plan.moe_a2a_overlap=false", "--set", "plan.delay_wgrad_compute=false", "--allow-oom"});
  ASSERT_TRUE(summary.contains("iteration_time_s"));
  const double published_s = 8192.0 * 4096 / (1297.0 * 1024);
  const double error = (summary["iteration_time_s"].get<double>() / published_s - 1) * 100;
  EXPECT_NEAR(error, 15.4, 2.0);
}

TEST(MegatronBridgeMoeLargeValidation, DeepSeekV3OnB200IsHeldToItsKnownError) {
  const auto r = run_cli(
      {"validate",
       std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_bridge_moe/b200_deepseek_v3_mxfp8.csv",
       "--template",
       std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-dgx-b200-deepseek-v3.yaml",
       "--allow-oom"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NEAR(first_row_error_percent(r.out), 3.9, 2.0) << r.out;
}

// The 25.11 row (1,575 tokens/s per GPU on 256 H100s, GBS 2048: 20.805 s a
// step) at full size: TP 2, PP 8, VP 4, EP 32 folded over TP 2 x DP 16 (expert
// TP 1), 128 micro-batches per pipeline, with the recipe's EP A2A overlap and
// delay_wgrad_compute: about 8-13 CPU-minutes and 2.3 GiB. -1.5% before the
// deferral was modelled (2026-12-06, fourth session), -8.4% since.
TEST(MegatronBridgeMoeLargeValidation, Qwen3_235bOnH100AtGbs2048IsHeldToItsKnownError) {
  // Too long for .ci/run's 30 minutes on two cores (README, "Validation
  // status"): run on demand with TRAINSIM_FULL_SIZE_TESTS=1.
  if (std::getenv("TRAINSIM_FULL_SIZE_TESTS") == nullptr)
    GTEST_SKIP() << "a 13-CPU-minute replay at full size: set TRAINSIM_FULL_SIZE_TESTS=1 to run it";
  const auto r =
      run_cli({"validate",
               std::string(TRAINSIM_SOURCE_DIR) +
                   "/tests/fixtures/megatron_bridge_moe/h100_qwen3_235b_a22b_fp8cs_gbs2048.csv",
               "--template",
               std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-h100-qwen3-235b-a22b.yaml"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NEAR(first_row_error_percent(r.out), -8.4, 2.0) << r.out;
}

}  // namespace
}  // namespace trainsim::testing
