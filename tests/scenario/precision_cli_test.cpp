// FP8 training through the real CLI: a plan says plan.precision: fp8 and
// gets FP8 GEMMs, both MFU figures, the FP8 keys in summary.json (and none
// of them in a BF16 summary), and the quantization kernels in its timeline;
// the shipped comparison runs BF16 and FP8 side by side.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;

// Llama 3.1 8B at 2,048 tokens on one DGX H100 node, TP 2 with sequence
// parallelism (its all-gathers move FP8), the distributed optimizer.
std::vector<std::string> small_llama(const std::string& precision) {
  return {"run",   "scenarios/quickstart.yaml",
          "--set", "cluster.gpu=H100-SXM",
          "--set", "model.preset=llama3.1-8b",
          "--set", "model.seq_len=2048",
          "--set", "model.layers=4",
          "--set", "plan.tp=2",
          "--set", "plan.pp=1",
          "--set", "plan.dp=auto",
          "--set", "plan.sequence_parallel=true",
          "--set", "plan.zero_stage=1",
          "--set", "plan.global_batch_size=16",
          "--set", "plan.precision=" + precision};
}

TEST(PrecisionCli, Fp8RunsFasterAndReportsMfuAgainstBothPeaks) {
  const auto bf16 = run_summary(small_llama("bf16"));
  const auto fp8 = run_summary(small_llama("fp8"));
  ASSERT_FALSE(bf16.empty());
  ASSERT_FALSE(fp8.empty());
  EXPECT_LT(fp8["iteration_time_s"].get<double>(), bf16["iteration_time_s"].get<double>());
  // The same model FLOPs: MFU grows with the speed, against the BF16 peak.
  EXPECT_DOUBLE_EQ(fp8["model_flops_per_iteration"].get<double>(),
                   bf16["model_flops_per_iteration"].get<double>());
  EXPECT_NEAR(fp8["mfu"].get<double>() / bf16["mfu"].get<double>(),
              bf16["iteration_time_s"].get<double>() / fp8["iteration_time_s"].get<double>(), 1e-9);
  // H100's dense peaks: 989.4 TFLOP/s BF16, 1,978.9 FP8.
  EXPECT_NEAR(fp8["mfu_fp8_peak"].get<double>(), fp8["mfu"].get<double>() * 989.4 / 1978.9, 1e-12);
  EXPECT_EQ(fp8["plan"]["precision"], "fp8");
  EXPECT_EQ(fp8["plan"]["fp8_recipe"], "delayed");
  EXPECT_EQ(fp8["plan"]["fp8_param_gather"], false);
  // BF16 summaries keep the keys they always had.
  EXPECT_FALSE(bf16.contains("mfu_fp8_peak"));
  EXPECT_FALSE(bf16["plan"].contains("precision"));
}

TEST(PrecisionCli, TheTerminalSummarySaysWhichPeakEachMfuIsOf) {
  auto args = small_llama("fp8");
  const auto out = fresh_dir("fp8-terminal");
  args.insert(args.end(), {"--out", out.string()});
  const auto r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("FP8 GEMMs (delayed scaling)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MFU (of the BF16 peak)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MFU of the FP8 peak"), std::string::npos) << r.out;
  fs::remove_all(out);
}

// FP8 primary weights halve the distributed optimizer's parameter
// all-gather (the layers' weights at 1 byte; the embedding and output layer
// at 2) and drop Transformer Engine's FP8 weight copies from memory.
TEST(PrecisionCli, Fp8ParamGatherShrinksTheParameterAllGatherAndTheWeights) {
  auto plain = small_llama("fp8");
  auto gather = small_llama("fp8");
  gather.insert(gather.end(), {"--set", "plan.fp8_param_gather=true"});
  const auto a = run_summary(plain);
  const auto b = run_summary(gather);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_LT(b["peak_memory_bytes"].get<double>(), a["peak_memory_bytes"].get<double>());
  const double link_a = a["utilization"]["link_bytes"].get<double>();
  const double link_b = b["utilization"]["link_bytes"].get<double>();
  EXPECT_LT(link_b, link_a);
}

TEST(PrecisionCli, Fp8OnAGpuWithoutFp8TensorCoresIsAnInputError) {
  auto args = small_llama("fp8");
  args[3] = "cluster.gpu=A100-SXM-80GB";
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no FP8 tensor cores"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::testing
