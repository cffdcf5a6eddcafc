// The memory model and the parallelism options through the real CLI: peak
// memory in summary.json, the does-not-fit error and --allow-oom, sweeps
// dropping plans that do not fit, and the shipped scenario of each option
// standing where its design puts it against the option turned off.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(MemoryCli, SummaryReportsThePeakOfEveryGpuAndWhen) {
  const auto s = run_summary({"run", "scenarios/quickstart.yaml"});
  ASSERT_TRUE(s.contains("peak_memory_bytes"));
  EXPECT_TRUE(s["fits_in_memory"].get<bool>());
  double largest = 0;
  for (const auto& g : s["gpus"]) {
    const double peak = g["peak_memory_bytes"].get<double>();
    largest = std::max(largest, peak);
    EXPECT_GT(peak, 0);
    EXPECT_GE(g["peak_memory_time_s"].get<double>(), 0);
    EXPECT_LE(g["peak_memory_time_s"].get<double>(), s["iteration_time_s"].get<double>());
    EXPECT_DOUBLE_EQ(g["memory_capacity_bytes"].get<double>(), 80 * kGiB);
    double parts = 0;
    for (const auto& [kind, bytes] : g["memory_at_peak"].items())
      parts += bytes.get<double>();
    EXPECT_NEAR(parts, peak, 1e-6 * peak);
  }
  EXPECT_DOUBLE_EQ(s["peak_memory_bytes"].get<double>(), largest);
  // 1F1B: the first stage holds the most micro-batches.
  EXPECT_EQ(s["peak_memory_gpu"].get<int>(), 0);
  EXPECT_GT(s["gpus"][0]["peak_memory_bytes"].get<double>(),
            s["gpus"][12]["peak_memory_bytes"].get<double>());
}

// GPT-3 13B in plain data parallelism: 16 bytes per parameter is 192 GiB.
const std::vector<std::string> kTooBig = {
    "--set", "model.preset=gpt3-13b", "--set", "plan.tp=1", "--set", "plan.pp=1", "--set", "plan.dp=16"};

TEST(MemoryCli, APlanThatDoesNotFitIsRefusedWithTheGpuPeakCapacityAndBreakdown) {
  std::vector<std::string> args = {"run", "scenarios/quickstart.yaml", "--quiet", "--out",
                                   fresh_dir("oom").string()};
  args.insert(args.end(), kTooBig.begin(), kTooBig.end());
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.rfind("error: scenarios/quickstart.yaml:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("plan: does not fit in GPU memory: GPU 0 (pipeline stage 0, node 0, like the stage's "
                       "other 15 GPUs) needs "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("but the A100-SXM-80GB has 80GiB: weights 24GiB, gradients 24GiB, optimizer state "
                       "144GiB, activations "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--allow-oom"), std::string::npos) << r.err;
}

TEST(MemoryCli, AllowOomSimulatesAnywayAndTheSummarySaysItDoesNotFit) {
  std::vector<std::string> args = {"run", "scenarios/quickstart.yaml", "--allow-oom"};
  args.insert(args.end(), kTooBig.begin(), kTooBig.end());
  CliResult r;
  const auto s = run_summary(args, &r);
  EXPECT_NE(r.err.find("warning: scenarios/quickstart.yaml: plan: does not fit in GPU memory: GPU 0"),
            std::string::npos)
      << r.err;
  // Given --allow-oom, the warning does not suggest it.
  EXPECT_NE(r.err.find("; simulating it anyway (--allow-oom)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("or --allow-oom"), std::string::npos) << r.err;
  ASSERT_TRUE(s.contains("fits_in_memory"));
  EXPECT_FALSE(s["fits_in_memory"].get<bool>());
  EXPECT_GT(s["peak_memory_bytes"].get<double>(), 80 * kGiB);
  EXPECT_GT(s["iteration_time_s"].get<double>(), 0);
}

TEST(MemoryCli, SweepDropsPlansThatDoNotFitWithTheirReason) {
  const auto dir = fresh_dir("memory-sweep");
  const auto study = dir / "study.yaml";
  std::ofstream(study) << R"(name: fit
cluster:
  gpu: A100
  nodes: 1
  gpus_per_node: 4
  nvlink: {bandwidth: 300GBps, latency: 2us}
model:
  preset: gpt3-125m
plan:
  dp: auto
  micro_batch_size: 1
  global_batch_size: 8
sweep:
  grid:
    model.preset: [gpt3-125m, gpt3-13b]
)";
  const auto r = run_cli({"sweep", study.string(), "--out", (dir / "out").string(), "-j", "1", "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto results = json::parse(read_file(dir / "out" / "results.json"));
  const auto& rows = results["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["status"], "ok");
  EXPECT_EQ(rows[1]["status"], "dropped");
  const auto reason = rows[1]["reason"].get<std::string>();
  EXPECT_EQ(reason.rfind("does_not_fit_in_memory: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("does not fit in GPU memory: GPU 0"), std::string::npos) << reason;
  fs::remove_all(dir);
}

// The shipped scenario of each option, against the option turned off.

double figure(const json& s, const char* key) {
  return s.contains(key) ? s[key].get<double>() : 0;
}

TEST(OptionScenario, SequenceParallelFreesActivationsAtTheSameTime) {
  const auto on = run_summary({"run", "scenarios/sequence-parallel.yaml"});
  const auto off =
      run_summary({"run", "scenarios/sequence-parallel.yaml", "--set", "plan.sequence_parallel=false"});
  EXPECT_TRUE(on["plan"]["sequence_parallel"].get<bool>());
  EXPECT_LT(figure(on, "peak_memory_bytes"), 0.8 * figure(off, "peak_memory_bytes"));
  // Same TP volume and latency terms, while the per-op cost model splits the
  // layer norms and dropouts over the TP group: never slower.
  EXPECT_LT(figure(on, "iteration_time_s"), figure(off, "iteration_time_s"));
}

TEST(OptionScenario, ContextParallelHidesItsRingInANodeButNotAcrossNodes) {
  const auto node = run_summary({"run", "scenarios/context-parallel.yaml"});
  const auto across = run_summary(
      {"run", "scenarios/context-parallel.yaml", "--set", "plan.context_parallel=8", "--set", "plan.dp=1"});
  EXPECT_EQ(node["plan"]["context_parallel"].get<int>(), 4);
  EXPECT_LT(figure(node, "exposed_comm_fraction"), 0.1);
  EXPECT_GT(figure(across, "exposed_comm_fraction"), 0.3);
  EXPECT_LT(figure(node, "iteration_time_s") / 2, figure(across, "iteration_time_s"));
}

TEST(OptionScenario, FsdpFitsWherePlainDataParallelismDoesNot) {
  const auto fsdp = run_summary({"run", "scenarios/zero-fsdp.yaml"});
  EXPECT_EQ(fsdp["plan"]["zero_stage"].get<int>(), 3);
  EXPECT_TRUE(fsdp["fits_in_memory"].get<bool>());
  const auto r = run_cli({"run", "scenarios/zero-fsdp.yaml", "--set", "plan.zero_stage=0", "--quiet", "--out",
                          fresh_dir("zero0").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("does not fit in GPU memory"), std::string::npos) << r.err;
}

TEST(OptionScenario, GradientBucketsHideMostOfTheAllReduce) {
  const auto on = run_summary({"run", "scenarios/grad-buckets.yaml"});
  const auto off =
      run_summary({"run", "scenarios/grad-buckets.yaml", "--set", "plan.overlap_grad_reduce=false"});
  // The data-parallel all-reduce runs over 8 NICs (NCCL channels per rail)
  // and is a small part of the iteration either way; what buckets change is
  // how much of it shows.
  const auto exposed_dp = [](const json& s) {
    return s["utilization"]["exposed_comm_by_kind_gpu_seconds"]["dp"].get<double>();
  };
  EXPECT_LT(exposed_dp(on), 0.5 * exposed_dp(off));
  EXPECT_LT(figure(on, "iteration_time_s"), figure(off, "iteration_time_s"));
}

TEST(OptionScenario, ZeroStagesCompareSideBySide) {
  const auto out = fresh_dir("compare-zero");
  const auto r =
      run_cli({"compare", "scenarios/compare-zero-stages.yaml", "--out", out.string(), "-j", "2", "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("peak memory"), std::string::npos) << r.out;
  double previous = 1e30;
  for (const char* variant : {"zero1", "zero2", "fsdp"}) {
    const auto s = json::parse(read_file(out / variant / "summary.json"));
    const double peak = s["peak_memory_bytes"].get<double>();
    EXPECT_LT(peak, previous) << variant;  // each stage shards more
    previous = peak;
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace trainsim::testing
