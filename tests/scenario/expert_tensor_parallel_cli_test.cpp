// Expert tensor parallelism 1 (Megatron's MoE parallel folding) replayed
// through the real CLI: an EP group wider than the data-parallel group runs
// end to end and is reported; expert_tensor_parallel equal to tp (here 1
// with tp 1) changes nothing, byte for byte; one between 1 and tp replays
// its expert-TP collectives; a bad value exits 1 with one error naming
// file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/run_summary.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// Qwen3-30B-A3B's experts (128, top-8), 4 layers, on two 8-GPU nodes: tp 2
// x dp 8 with EP 16, which only the folded layout holds (EP over tp x dp).
const std::string kFolded = R"(cluster:
  gpu: H100-SXM
  nodes: 2
  gpus_per_node: 8
model:
  preset: qwen3-30b-a3b
  layers: 4
  seq_len: 1024
plan:
  tp: 2
  sequence_parallel: true
  dp: 8
  expert_parallel: 16
  expert_tensor_parallel: 1
  micro_batch_size: 1
  global_batch_size: 16
)";

TEST(ExpertTensorParallelCli, AFoldedEpGroupWiderThanDataParallelismReplaysAndIsReported) {
  const auto out = fresh_dir("etp-folded");
  const auto r = run_text(kFolded, out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(summary["plan"]["expert_tensor_parallel"], 1);
  EXPECT_EQ(summary["plan"]["expert_parallel"], 16);
  // The EP group spans both nodes: its all-to-alls cost time on the fabric.
  EXPECT_GT(summary["utilization"]["exposed_comm_by_kind_gpu_seconds"]["ep"].get<double>(), 0.0);
  EXPECT_GT(summary["iteration_time_s"].get<double>(), 0.0);
  fs::remove_all(out);
}

TEST(ExpertTensorParallelCli, ExpertTpEqualToTpIsByteIdenticalToLeavingItOut) {
  // tp 1, dp 16, EP 16: expert_tensor_parallel 1 is tp, today's layout.
  const std::string plain = with(with(kFolded, "  tp: 2\n  sequence_parallel: true\n  dp: 8\n", "  dp: 16\n"),
                                 "  expert_tensor_parallel: 1\n", "");
  const std::string same =
      with(plain, "  expert_parallel: 16\n", "  expert_parallel: 16\n  expert_tensor_parallel: 1\n");
  const auto a = fresh_dir("etp-plain"), b = fresh_dir("etp-same");
  ASSERT_EQ(run_text(plain, a).status, 0);
  ASSERT_EQ(run_text(same, b).status, 0);
  EXPECT_EQ(read_file(a / "summary.json"), read_file(b / "summary.json"));
  EXPECT_EQ(read_file(a / "timeline.csv"), read_file(b / "timeline.csv"));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(ExpertTensorParallelCli, AnExpertTpBetweenOneAndTpReplaysItsGatherAndScatter) {
  // tp 4 x dp 4, EP 4 x expert TP 2: the expert-TP groups (GPU pairs of a
  // TP group) all-gather and reduce-scatter the dispatched tokens.
  const std::string between =
      with(with(kFolded, "  tp: 2\n  sequence_parallel: true\n  dp: 8\n  expert_parallel: 16\n",
                "  tp: 4\n  sequence_parallel: true\n  dp: 4\n  expert_parallel: 4\n"),
           "  expert_tensor_parallel: 1\n", "  expert_tensor_parallel: 2\n");
  const auto out = fresh_dir("etp-between");
  const auto r = run_text(between, out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(summary["plan"]["expert_tensor_parallel"], 2);
  EXPECT_GT(summary["iteration_time_s"].get<double>(), 0.0);
  // The expert-TP pairs' all-gathers and reduce-scatters, each of 2 x
  // the dispatch buffer 2 x (1024 / 4) tokens x top-8 x 2048 x 2 bytes =
  // 16 MiB (the attention's TP collectives move b s h x 2 = 4 MiB): on each
  // of the 16 GPUs one of each per op, forward and backward of 4
  // micro-batches.
  int gathers = 0, scatters = 0;
  std::istringstream timeline(read_file(out / "timeline.csv"));
  for (std::string line; std::getline(timeline, line);) {
    if (line.find(",16777216,") == std::string::npos)
      continue;
    gathers += line.find(",tp all_gather ") != std::string::npos;
    scatters += line.find(",tp reduce_scatter ") != std::string::npos;
  }
  EXPECT_EQ(gathers, 16 * 4 * 2);
  EXPECT_EQ(scatters, 16 * 4 * 2);
  fs::remove_all(out);
}

TEST(ExpertTensorParallelCli, AnExpertTpNotDividingTpIsOneErrorAtItsLine) {
  expect_one_error(run_text(with(kFolded, "  expert_tensor_parallel: 1\n", "  expert_tensor_parallel: 4\n")),
                   "14:", "plan.expert_tensor_parallel", "expected a divisor of 2 (1, 2)");
}

}  // namespace
}  // namespace trainsim::testing
