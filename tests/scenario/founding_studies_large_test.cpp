// Study 3's DeepSeek-V3 points (scenarios/study-hardware-generations.yaml,
// variants dsv3-*) at full size, as docs/founding_studies.md ("DeepSeek-V3")
// reports them: 61 layers on 576 GPUs of DGX H100, DGX B200 and GB200 NVL72,
// BF16 and FP8, through `trainsim sweep`, then GB200's FP8 plan on other
// networks through `trainsim run`. About 70 CPU-seconds (2-3 minutes of wall
// time on 2 shared cores), so labelled slow. Holds each point to the
// write-up's figures, so that a change to the MoE, FP8 or network models
// shows here, to what the write-up concludes from them, and its plots to
// the points they draw.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

double figure(const json& row, const std::string& name) {
  EXPECT_EQ(row["status"], "ok") << row.dump();
  return row.contains(name) && row[name].is_number() ? row[name].get<double>() : -1;
}

// Exposed expert all-to-all per step, in seconds per GPU (its share of the
// GPUs' time x the step).
double all_to_all_s(const json& row) {
  return figure(row, "utilization.exposed_comm_by_op_fraction.ep_all_to_all") *
         figure(row, "iteration_time_s");
}

// The points a study plot draws, as its SVG names them in each marker's
// title ("fp8: cluster = dgx-b200, tokens/s per GPU = 1587.71"): line
// label + "|" + x category -> y in the plot's unit.
std::map<std::string, double> plotted_points(const fs::path& svg) {
  const std::string text = read_file(svg);
  static const std::regex marker("<title>([^:<]+): cluster = ([^,<]+), [^=<]+ = ([-+0-9.e]+)</title>");
  std::map<std::string, double> points;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), marker); it != std::sregex_iterator(); ++it)
    points[(*it)[1].str() + "|" + (*it)[2].str()] = std::stod((*it)[3].str());
  return points;
}

struct Reported {
  double tokens_per_s_per_gpu;
  double mfu;           // model FLOPs against the dense BF16 peak
  double all_to_all_s;  // exposed, per step
};

TEST(FoundingStudiesLarge, HardwareGenerationsDeepSeekV3PointsKeepTheirReportedFigures) {
  const auto dir = fresh_dir("study-generations-dsv3-full");
  const auto r = run_cli({"sweep", "scenarios/study-hardware-generations.yaml", "--out", dir.string(), "-j",
                          "2", "--quiet", "--keep", "summary", "--only",
                          "variant=dsv3-h100-bf16,dsv3-h100-fp8,dsv3-b200-bf16,dsv3-b200-fp8,dsv3-gb200-bf16,"
                          "dsv3-gb200-fp8"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto results = json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(results["rows"].size(), 6u);
  std::map<std::string, json> rows;
  for (const auto& row : results["rows"])
    rows[row["variant"].get<std::string>()] = row;

  // docs/founding_studies.md, "DeepSeek-V3" (scripts/founding_tables generations).
  const std::map<std::string, Reported> reported = {
      {"dsv3-h100-bf16", {648, 0.191, 2.78}},   {"dsv3-h100-fp8", {936, 0.276, 2.78}},
      {"dsv3-b200-bf16", {1188, 0.154, 1.62}},  {"dsv3-b200-fp8", {1588, 0.206, 1.62}},
      {"dsv3-gb200-bf16", {1875, 0.219, 0.44}}, {"dsv3-gb200-fp8", {2823, 0.330, 0.30}},
  };
  for (const auto& [variant, want] : reported) {
    const auto& row = rows[variant];
    EXPECT_NEAR(figure(row, "tokens_per_s_per_gpu"), want.tokens_per_s_per_gpu,
                0.005 * want.tokens_per_s_per_gpu)
        << variant;
    EXPECT_NEAR(figure(row, "mfu"), want.mfu, 0.0015) << variant;
    EXPECT_NEAR(all_to_all_s(row), want.all_to_all_s, 0.01 + 0.01 * want.all_to_all_s) << variant;
    EXPECT_EQ(row["fits_in_memory"], true) << variant;
  }

  // The write-up's DeepSeek-V3 plots (docs/founding/hardware-generations/
  // dsv3-*.svg, this sweep's plots/): one line per precision, one point per
  // cluster, each the point's figure (MFU in percent); the Llamas' MFU plot
  // (their 8,192-token points) draws none of them.
  const std::map<std::string, std::pair<std::string, double>> dsv3_plots = {
      {"dsv3-tokens-per-gpu.svg", {"tokens_per_s_per_gpu", 1.0}},
      {"dsv3-tokens-per-joule.svg", {"energy.tokens_per_J", 1.0}},
      {"dsv3-mfu-bf16-peak.svg", {"mfu", 100.0}},
  };
  const std::map<std::string, std::string> cluster_of = {
      {"h100", "dgx-h100-ndr"}, {"b200", "dgx-b200"}, {"gb200", "gb200-nvl72"}};
  for (const auto& [file, column] : dsv3_plots) {
    const auto points = plotted_points(dir / "plots" / file);
    EXPECT_EQ(points.size(), 6u) << file;
    for (const auto& [gpu, cluster] : cluster_of)
      for (const std::string precision : {"bf16", "fp8"}) {
        const auto at = points.find(precision + "|" + cluster);
        ASSERT_NE(at, points.end()) << file << ": no " << precision << " point at " << cluster;
        const double want = column.second * figure(rows["dsv3-" + gpu + "-" + precision], column.first);
        EXPECT_NEAR(at->second, want, 1e-5 * want) << file << " " << precision << " " << cluster;
      }
  }
  EXPECT_TRUE(plotted_points(dir / "plots" / "mfu-bf16-peak.svg").empty());

  const std::string per_gpu = "tokens_per_s_per_gpu";
  for (const std::string precision : {"bf16", "fp8"}) {
    const auto& h100 = rows["dsv3-h100-" + precision];
    const auto& b200 = rows["dsv3-b200-" + precision];
    const auto& gb200 = rows["dsv3-gb200-" + precision];
    // GB200 NVL72 per GPU against DGX B200: 1.58x (BF16) and 1.78x (FP8) for
    // DeepSeek-V3, against 1.06-1.10x for the dense Llamas of the same study:
    // its EP groups of 64 dispatch over NVLink inside a domain.
    EXPECT_GT(figure(gb200, per_gpu), 1.5 * figure(b200, per_gpu)) << precision;
    EXPECT_LT(all_to_all_s(gb200), 0.3 * all_to_all_s(b200)) << precision;
    // B200 against H100: 1.83x (BF16), 1.70x (FP8), below the 2.29-2.34x of
    // the dense Llamas: the same 400 Gb/s per GPU carries the dispatch.
    EXPECT_GT(figure(b200, per_gpu), 1.6 * figure(h100, per_gpu)) << precision;
    EXPECT_LT(figure(b200, per_gpu), 2.0 * figure(h100, per_gpu)) << precision;
  }
  // FP8 buys 1.34-1.51x per GPU; the all-to-alls dispatch BF16 in both, so
  // their exposed time does not shrink with the GEMMs.
  for (const std::string gpu : {"h100", "b200", "gb200"}) {
    const auto& bf16 = rows["dsv3-" + gpu + "-bf16"];
    const auto& fp8 = rows["dsv3-" + gpu + "-fp8"];
    EXPECT_GT(figure(fp8, per_gpu), 1.3 * figure(bf16, per_gpu)) << gpu;
    EXPECT_LT(figure(fp8, per_gpu), 1.6 * figure(bf16, per_gpu)) << gpu;
  }

  // The same plan (GB200's FP8 winner: TP 1 x PP 3 x DP 192, EP 64) on
  // other networks, as the write-up's "Same plan, other network" table:
  // on DGX B200 its EP groups span 8 nodes (6.43 s, 2.77 s of exposed
  // all-to-all against 2.90 s and 0.30 s); on GB200 racks of 72 they
  // straddle racks, HybridEP cannot relay them, and NCCL's all-to-all takes
  // 8.10 s against 3.03 s on 64-GPU domains.
  const auto gb200_fp8 =
      dir / "points" / rows["dsv3-gb200-fp8"]["point"].get<std::string>() / "scenario.yaml";
  const auto rerun_of = [&](const fs::path& scenario, const std::string& name,
                            const std::vector<std::string>& sets) {
    std::vector<std::string> args = {"run", scenario.string(), "--out", (dir / name).string(), "--quiet"};
    for (const auto& s : sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const auto run = run_cli(args);
    EXPECT_EQ(run.status, 0) << run.err << run.out;
    return json::parse(read_file(dir / name / "summary.json"));
  };
  const auto rerun = [&](const std::string& name, const std::vector<std::string>& sets) {
    return rerun_of(gb200_fp8, name, sets);
  };
  const auto step_s = [](const json& summary) { return summary["iteration_time_s"].get<double>(); };
  const auto summary_all_to_all_s = [&](const json& summary) {
    return summary["utilization"]["exposed_comm_by_op_fraction"]["ep_all_to_all"].get<double>() *
           step_s(summary);
  };
  const auto on_b200 =
      rerun("on-dgx-b200", {"cluster.preset=dgx-b200", "cluster.nodes=72", "cluster.nvlink_domain=8",
                            "cluster.collectives.compute_interference=0.16",
                            "cluster.collectives.detailed_flow_limit=100000"});
  EXPECT_NEAR(step_s(on_b200), 6.43, 0.01);
  EXPECT_NEAR(summary_all_to_all_s(on_b200), 2.77, 0.03);
  EXPECT_GT(step_s(on_b200), 2.0 * figure(rows["dsv3-gb200-fp8"], "iteration_time_s"));
  const auto nccl_64 = rerun("nccl-domain-64", {"plan.moe_dispatcher=all_to_all"});
  const auto nccl_72 = rerun("nccl-racks-72", {"plan.moe_dispatcher=all_to_all", "cluster.nvlink_domain=72"});
  EXPECT_NEAR(step_s(nccl_64), 3.03, 0.01);
  EXPECT_NEAR(step_s(nccl_72), 8.10, 0.01);
  EXPECT_NEAR(summary_all_to_all_s(nccl_72), 2.73, 0.03);
  // B200's FP8 plan (EP 32 over 4 DGX nodes, 5.16 s) on GB200's 64-GPU
  // domains: 2.96 s.
  const auto b200_fp8 = dir / "points" / rows["dsv3-b200-fp8"]["point"].get<std::string>() / "scenario.yaml";
  const auto on_gb200 = rerun_of(
      b200_fp8, "b200-plan-on-gb200",
      {"cluster.preset=gb200-nvl72", "cluster.nodes=144", "cluster.nvlink_domain=64",
       "cluster.collectives.compute_interference=0.16", "cluster.collectives.detailed_flow_limit=100000"});
  EXPECT_NEAR(step_s(on_gb200), 2.96, 0.01);
  const auto refused = run_cli({"run", gb200_fp8.string(), "--out", (dir / "deepep-racks-72").string(),
                                "--quiet", "--set", "cluster.nvlink_domain=72"});
  EXPECT_EQ(refused.status, 1) << refused.out;
  EXPECT_NE(refused.err.find("deepep"), std::string::npos) << refused.err;
  fs::remove_all(dir);
}

// Llama-3.1 70B on 72 DGX B200 nodes in FP8: the winner of its CP 2 search
// (2026-12-06; docs/founding_studies.md, "3. Hardware generations"), TP 2 x
// PP 2 x VP 8 x CP 2 x DP 72, MBS 2, at full size (80 layers, 1,152
// sequences of 8,192 tokens): about 130 CPU-seconds. The BF16 point runs the
// same plan (5.871 s, 2,791 tokens/s per GPU) and costs as much again; it is
// left to the study's whole run (docs/performance.md) to keep .ci/run's
// budget: the FP8 point exercises everything the BF16 one does and FP8's
// GEMMs besides.
TEST(FoundingStudiesLarge, HardwareGenerations70bOnB200RunsItsCp2PlanAtTheReportedFigures) {
  const auto dir = fresh_dir("study-generations-70b-b200-full");
  const auto r = run_cli({"sweep", "scenarios/study-hardware-generations.yaml", "--out", dir.string(), "-j",
                          "1", "--quiet", "--keep", "summary", "--only", "variant=70b-b200-fp8"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto results = json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(results["rows"].size(), 1u);
  const auto& row = results["rows"][0];
  EXPECT_EQ(row["variant"], "70b-b200-fp8");
  EXPECT_EQ(row["plan.tp"], 2);
  EXPECT_EQ(row["plan.pp"], 2);
  EXPECT_EQ(row["plan.context_parallel"], 2);
  EXPECT_EQ(row["plan.dp"], 72);
  // docs/founding_studies.md's table (scripts/founding_tables generations):
  // step, tokens/s per GPU, MFU against the BF16 peak.
  EXPECT_NEAR(figure(row, "iteration_time_s"), 4.273, 0.002);
  EXPECT_NEAR(figure(row, "tokens_per_s_per_gpu"), 3834, 1.0);
  EXPECT_NEAR(figure(row, "mfu"), 0.820, 0.0015);
  EXPECT_EQ(row["fits_in_memory"], true);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
