// DeepEP dispatch, node-limited routing and the all-to-all / compute
// overlap through the real CLI (issue 33 items 2 and 4): a small
// fine-grained MoE whose EP group spans 4 nodes, run with each dispatcher
// and with the overlap on and off; what summary.json and the trace say.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_summary.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// DeepSeek-V2-Lite's experts (64 of 1408 + 2 shared, top-6), 4 layers, on
// 4 nodes of 4 H100s: pp 2, dp 8, ep 8 (an EP group is 8 consecutive
// positions: 2 nodes).
const std::string kMoe = R"(cluster:
  gpu: H100-SXM
  nodes: 4
  gpus_per_node: 4
model:
  preset: deepseek-v2-lite
  layers: 4
  seq_len: 2048
plan:
  pp: 2
  dp: 8
  expert_parallel: 8
  micro_batch_size: 1
  global_batch_size: 64
)";

json run_summary(const std::string& extra_plan, const std::string& name, std::string* terminal = nullptr,
                 const std::string& extra_model = "") {
  const auto out = fresh_dir(name);
  const auto r =
      run_text(with(with(kMoe, "  global_batch_size: 64\n", "  global_batch_size: 64\n" + extra_plan),
                    "  seq_len: 2048\n", "  seq_len: 2048\n" + extra_model),
               out);
  EXPECT_EQ(r.status, 0) << r.err;
  json summary = json::parse(read_file(out / "summary.json"));
  if (terminal != nullptr)
    *terminal = read_file(out / "trace.json");
  fs::remove_all(out);
  return summary;
}

double exposed_ep(const json& summary) {
  return summary["utilization"]["exposed_comm_by_kind_gpu_seconds"]["ep"].get<double>();
}

TEST(MoeDispatchCli, DeepepWithNodeLimitedRoutingMovesLessAndRunsFaster) {
  std::string trace;
  const json nccl = run_summary("", "dispatch-nccl");
  const json deepep = run_summary("  moe_dispatcher: deepep\n", "dispatch-deepep", &trace);
  const json limited = run_summary("  moe_dispatcher: deepep\n", "dispatch-limited", nullptr,
                                   "  moe:\n    max_nodes_per_token: 1\n");
  EXPECT_FALSE(nccl["plan"].contains("moe_dispatcher"));
  EXPECT_EQ(deepep["plan"]["moe_dispatcher"], "deepep");
  // Each token once per GPU (6 of 64 experts top-6: 4.4 of 8 GPUs, against 6
  // copies) and once per node across: less to move, less exposed.
  EXPECT_LT(exposed_ep(deepep), exposed_ep(nccl));
  EXPECT_LT(deepep["iteration_time_s"].get<double>(), nccl["iteration_time_s"].get<double>());
  EXPECT_NE(trace.find("deepep"), std::string::npos);
  // One node per token: nothing crosses InfiniBand but the relay's half.
  EXPECT_EQ(limited["model"]["moe"]["max_nodes_per_token"], 1);
  EXPECT_LT(exposed_ep(limited), exposed_ep(deepep));
}

// Group-limited routing (Megatron's moe_router_num_groups 4, group_topk 2):
// 64 experts in 4 groups of 16 (2 GPUs, half a node here), each token's 6
// from 2 groups, 3 each. A node is reached with 1 - C(2, 2)/C(4, 2) = 5/6
// (0.985 without the groups), so deepep moves less across nodes; NCCL
// all-to-all moves one copy per expert either way: the same step.
TEST(MoeDispatchCli, GroupLimitedRoutingCutsDeepepTrafficAndLeavesAllToAllAlone) {
  const std::string groups = "  moe:\n    router_num_groups: 4\n    router_group_topk: 2\n";
  const json deepep = run_summary("  moe_dispatcher: deepep\n", "groups-off");
  const json grouped = run_summary("  moe_dispatcher: deepep\n", "groups-on", nullptr, groups);
  EXPECT_EQ(grouped["model"]["moe"]["router_num_groups"], 4);
  EXPECT_EQ(grouped["model"]["moe"]["router_group_topk"], 2);
  EXPECT_FALSE(deepep["model"]["moe"].contains("router_num_groups"));
  EXPECT_LT(exposed_ep(grouped), exposed_ep(deepep));
  EXPECT_LE(grouped["iteration_time_s"].get<double>(), deepep["iteration_time_s"].get<double>());
  const json nccl = run_summary("", "groups-nccl-off");
  const json nccl_grouped = run_summary("", "groups-nccl-on", nullptr, groups);
  EXPECT_EQ(nccl_grouped["iteration_time_s"].get<double>(), nccl["iteration_time_s"].get<double>());
  EXPECT_EQ(exposed_ep(nccl_grouped), exposed_ep(nccl));
}

// 8 layers: 4 per stage, so a merged F&B has layers to interleave (the
// overlap works at layer granularity). Measured: 0.397 s -> 0.326 s, the
// exposed all-to-all time 2.00 -> 1.43 GPU-seconds.
TEST(MoeDispatchCli, OverlappingTheAllToAllsHidesThemUnderTheOtherMicroBatch) {
  const auto run = [&](const std::string& plan_extra, const std::string& name) {
    const auto out = fresh_dir(name);
    const auto r = run_text(with(with(kMoe, "  layers: 4\n", "  layers: 8\n"), "  global_batch_size: 64\n",
                                 "  global_batch_size: 64\n" + plan_extra),
                            out);
    EXPECT_EQ(r.status, 0) << r.err;
    json summary = json::parse(read_file(out / "summary.json"));
    fs::remove_all(out);
    return summary;
  };
  const json plain = run("", "overlap-off");
  const json merged = run("  moe_a2a_overlap: true\n", "overlap-on");
  EXPECT_EQ(merged["plan"]["moe_a2a_overlap"], true);
  EXPECT_LT(exposed_ep(merged), 0.8 * exposed_ep(plain));
  EXPECT_LT(merged["iteration_time_s"].get<double>(), 0.9 * plain["iteration_time_s"].get<double>());
  // The same work: model FLOPs unchanged.
  EXPECT_DOUBLE_EQ(merged["model_flops_per_iteration"].get<double>(),
                   plain["model_flops_per_iteration"].get<double>());
}

void expect_refused(const CliResult& r, const std::string& key, const std::string& detail) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(key), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("simgrid"), std::string::npos) << r.err;
}

TEST(MoeDispatchCli, BadCombinationsAreOneErrorEach) {
  expect_refused(run_text(with(kMoe, "  global_batch_size: 64\n",
                               "  global_batch_size: 64\n  moe_a2a_overlap: true\n  schedule: gpipe\n")),
                 "moe_a2a_overlap", "expected schedule 1f1b, interleaved_1f1b, dualpipe_v or dualpipe");
  expect_refused(
      run_text(with(kMoe, "  seq_len: 2048\n", "  seq_len: 2048\n  moe:\n    max_nodes_per_token: 3\n")),
      "max_nodes_per_token", "an EP group spans 2 nodes");
}

}  // namespace
}  // namespace trainsim::testing
