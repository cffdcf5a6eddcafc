#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

TEST(Cli, VersionAndHelpWork) {
  const auto v = run_cli({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.out.find("trainsim 0."), std::string::npos) << v.out;
  const auto h = run_cli({"--help"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("run"), std::string::npos);
  const auto rh = run_cli({"run", "--help"});
  EXPECT_EQ(rh.status, 0);
  EXPECT_NE(rh.out.find("--set"), std::string::npos) << rh.out;
}

TEST(Cli, UnknownOptionIsBadInput) {
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "--frobnicate"});
  EXPECT_EQ(r.status, 1);
  EXPECT_FALSE(r.err.empty());
}

TEST(Cli, QuickstartWritesSummaryTimelineAndTrace) {
  const auto out = fresh_dir("quickstart");
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time"), std::string::npos);
  EXPECT_NE(r.out.find("MFU"), std::string::npos);

  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(summary["schema"], "trainsim.summary/3");
  EXPECT_GT(summary["iteration_time_s"].get<double>(), 0);
  EXPECT_GT(summary["tokens_per_s"].get<double>(), 0);
  EXPECT_GT(summary["mfu"].get<double>(), 0.05);
  EXPECT_LT(summary["mfu"].get<double>(), 1.0);
  // The terminal says what `mfu` counts and gives the named definitions.
  EXPECT_NE(r.out.find("matmul FLOPs + full causal attention"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MFU by definition"), std::string::npos) << r.out;
  for (const char* key : {"mfu_6n", "mfu_palm", "mfu_nvidia"}) {
    EXPECT_GT(summary[key].get<double>(), 0.05) << key;
    EXPECT_LT(summary[key].get<double>(), 1.0) << key;
  }
  // 6N has no attention term: below the count with it.
  EXPECT_LT(summary["mfu_6n"].get<double>(), summary["mfu_palm"].get<double>());
  EXPECT_EQ(summary["stages"].size(), 4u);
  // Every GPU in exactly one group, with the group's figures.
  std::vector<int> group_of(16, -1);
  for (std::size_t k = 0; k < summary["gpu_groups"].size(); ++k) {
    auto figures = summary["gpu_groups"][k];
    int counted = 0;
    for (const auto& range : figures["gpu_ranges"])
      for (int g = range[0].get<int>(); g <= range[1].get<int>(); ++g, ++counted) {
        ASSERT_EQ(group_of.at(static_cast<std::size_t>(g)), -1) << "GPU " << g << " in two groups";
        group_of[static_cast<std::size_t>(g)] = static_cast<int>(k);
        auto gpu = summary["gpus"][static_cast<std::size_t>(g)];
        gpu.erase("gpu");
        gpu.erase("node");
        auto expected = figures;
        expected.erase("gpu_count");
        expected.erase("gpu_ranges");
        EXPECT_EQ(gpu, expected) << "GPU " << g;
      }
    EXPECT_EQ(figures["gpu_count"], counted);
  }
  EXPECT_EQ(std::count(group_of.begin(), group_of.end(), -1), 0);
  EXPECT_LT(summary["gpu_groups"].size(), 16u);  // the two data-parallel replicas share figures
  EXPECT_NEAR(summary["tokens_per_s"].get<double>() * summary["iteration_time_s"].get<double>(), 64.0 * 2048,
              1e-6);

  const auto timeline = read_file(out / "timeline.csv");
  EXPECT_EQ(timeline.rfind("gpu,stream,kind,name,micro_batch,stage,start_s,end_s", 0), 0u);

  const auto trace = nlohmann::json::parse(read_file(out / "trace.json"));
  ASSERT_TRUE(trace.contains("traceEvents"));
  int complete = 0, flow_start = 0, flow_end = 0;
  for (const auto& e : trace["traceEvents"]) {
    const auto ph = e["ph"].get<std::string>();
    complete += ph == "X";
    const bool p2p = e.value("name", "") == "p2p";
    flow_start += ph == "s" && p2p;
    flow_end += ph == "f" && p2p;
    if (ph == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e.contains("pid") && e.contains("tid") && e.contains("ts"));
    }
  }
  EXPECT_GT(complete, 0);
  // dp 2 x tp 2 x 3 stage boundaries x 2 directions x 16 micro-batches.
  EXPECT_EQ(flow_start, 2 * 2 * 3 * 2 * 16);
  EXPECT_EQ(flow_end, flow_start);
  std::filesystem::remove_all(out);
}

TEST(Cli, SetOverridesChangeTheSimulatedPlan) {
  const auto out = fresh_dir("override");
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "-q", "--out", out.string(), "--set",
                          "plan.pp=2", "--set", "plan.dp=auto", "--set", "cluster.nodes=4"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(summary["plan"]["pp"], 2);
  EXPECT_EQ(summary["plan"]["dp"], 8);
  EXPECT_EQ(summary["cluster"]["gpus"], 32);
  EXPECT_EQ(summary["stages"].size(), 2u);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace trainsim::testing
