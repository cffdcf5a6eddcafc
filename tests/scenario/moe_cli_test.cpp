// Mixture of experts through the real CLI: bad model.moe and
// plan.expert_parallel keys give one clear error each, and the shipped
// Mixtral scenario reports its all-to-all time (summary.json, trace.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// A small MoE on one 8-GPU node: 4 layers, 8 experts top-2.
const std::string kMoe = R"(cluster:
  gpu: H100-SXM
  nodes: 1
  gpus_per_node: 8
  nvlink: {bandwidth: 450GBps, latency: 2us}
  nic: {bandwidth: 400Gbps, latency: 5us}
model:
  layers: 4
  hidden: 1024
  heads: 8
  seq_len: 1024
  vocab: 8000
  mlp: swiglu
  moe:
    experts: 8
    top_k: 2
plan:
  dp: 8
  expert_parallel: 4
  micro_batch_size: 1
  global_batch_size: 16
)";

std::string with(const std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos)
    return text;
  return text.substr(0, at) + to + text.substr(at + from.size());
}

CliResult run_text(const std::string& yaml, const fs::path& out = {}) {
  const auto path = write_temp_file("scenario.yaml", yaml);
  const auto dir = out.empty() ? path.parent_path() / "out" : out;
  return run_cli({"run", path.string(), "-q", "--out", dir.string()});
}

void expect_one_error(const CliResult& r, const std::string& location, const std::string& key,
                      const std::string& detail) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("scenario.yaml:" + location), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(key), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Backtrace"), std::string::npos) << r.err;
}

TEST(MoeCli, SmallMoeRunsWithAllToAllsOnTheEpStream) {
  const auto out = fresh_dir("moe-small");
  const auto r = run_text(kMoe, out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(read_file(out / "summary.json"));
  const auto& exposed = summary["utilization"]["exposed_comm_by_kind_gpu_seconds"];
  ASSERT_TRUE(exposed.contains("ep"));
  EXPECT_GT(exposed["ep"].get<double>(), 0);
  const json trace = json::parse(read_file(out / "trace.json"));
  int all_to_alls = 0;
  for (const auto& e : trace["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("cat", "") == "collective" &&
        e.value("name", "").rfind("ep all_to_all mb", 0) == 0)
      ++all_to_alls;
  // 8 GPUs x 2 micro-batches x (forward + backward).
  EXPECT_EQ(all_to_alls, 8 * 2 * 2);
  fs::remove_all(out);
}

TEST(MoeCli, UnknownMoeKeyIsNamed) {
  expect_one_error(run_text(with(kMoe, "    top_k: 2\n", "    top_k: 2\n    topk: 2\n")),
                   "17:", "model.moe.topk", "unknown key");
}

TEST(MoeCli, TopKAboveExpertsIsRejected) {
  expect_one_error(run_text(with(kMoe, "top_k: 2", "top_k: 9")), "16:", "model.moe.top_k",
                   "9 is more than model.moe.experts = 8");
}

TEST(MoeCli, MissingExpertsOnADenseModelIsRejected) {
  expect_one_error(run_text(with(kMoe, "    experts: 8\n", "")), "15:", "model.moe.experts", "missing");
}

TEST(MoeCli, CapacityFactorMustBeANumberOrNone) {
  expect_one_error(run_text(with(kMoe, "    top_k: 2\n", "    top_k: 2\n    capacity_factor: lots\n")),
                   "17:", "model.moe.capacity_factor", "'lots' is not a number");
  EXPECT_EQ(run_text(with(kMoe, "    top_k: 2\n", "    top_k: 2\n    capacity_factor: none\n")).status, 0);
}

TEST(MoeCli, ExpertParallelMustDivideTheExperts) {
  expect_one_error(run_text(with(kMoe, "experts: 8", "experts: 6")), "19:", "plan.expert_parallel",
                   "4 does not divide model.moe.experts = 6");
}

TEST(MoeCli, ExpertParallelMustDivideDpTimesCp) {
  const std::string yaml = with(with(kMoe, "  dp: 8\n", "  dp: 4\n  tp: 2\n  sequence_parallel: true\n"),
                                "expert_parallel: 4", "expert_parallel: 8");
  expect_one_error(run_text(yaml), "21:", "plan.expert_parallel", "does not divide dp x cp = 4 x 1 = 4");
}

TEST(MoeCli, ExpertParallelNeedsAMoeModel) {
  expect_one_error(run_text(with(kMoe, "  moe:\n    experts: 8\n    top_k: 2\n", "")),
                   "16:", "plan.expert_parallel", "with a dense model");
}

TEST(MoeCli, ExpertParallelWithTensorParallelNeedsSequenceParallel) {
  expect_one_error(run_text(with(kMoe, "  dp: 8\n", "  dp: 4\n  tp: 2\n")), "20:", "plan.expert_parallel",
                   "needs sequence_parallel: true");
}

TEST(MoeCli, ExpertParallelRejectsZeroStageTwo) {
  expect_one_error(run_text(with(kMoe, "  dp: 8\n", "  dp: 8\n  zero_stage: 2\n")),
                   "20:", "plan.expert_parallel", "supports ZeRO stages 0 and 1");
}

}  // namespace
}  // namespace trainsim::testing
