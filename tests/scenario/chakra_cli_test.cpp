// Chakra traces through the real CLI: `trainsim export --chakra` and a replay
// of what it wrote give the very same timeline; a trace ASTRA-sim ships
// (tests/fixtures/chakra/astra-sim) replays with every output, stragglers
// and faults; bad traces are bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;

const std::string kRing =
    std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/chakra/astra-sim/custom_ring_allreduce_8npus_1MB";

// One DGX A100 node with nothing but a Chakra trace to replay.
std::string trace_scenario(const std::string& trace) {
  return "cluster:\n  preset: dgx-a100-hdr\n  nodes: 1\nworkload:\n  chakra: " + trace + "\n";
}

TEST(ChakraCli, ExportedScenarioReplaysToTheSameTimeline) {
  const fs::path dir = fresh_dir("chakra-export");
  const auto scenario = write_temp_file("scenario.yaml", kSmallPipelineScenario);
  const auto direct = run_cli({"run", scenario.string(), "-q", "--out", (dir / "direct").string()});
  ASSERT_EQ(direct.status, 0) << direct.err;
  const auto exported = run_cli({"export", scenario.string(), "--chakra", (dir / "trace").string()});
  ASSERT_EQ(exported.status, 0) << exported.err;
  EXPECT_TRUE(fs::exists(dir / "trace" / "scenario.15.et"));
  EXPECT_TRUE(fs::exists(dir / "trace" / "scenario.comm_groups.json"));
  const auto replayed = run_cli(
      {"run", (dir / "trace" / "scenario.yaml").string(), "-q", "--out", (dir / "replayed").string()});
  ASSERT_EQ(replayed.status, 0) << replayed.err;
  for (const char* file : {"timeline.csv", "links.csv", "critical_path.csv"})
    EXPECT_EQ(read_file(dir / "direct" / file), read_file(dir / "replayed" / file)) << file;
  const auto a = nlohmann::json::parse(read_file(dir / "direct" / "summary.json"));
  const auto b = nlohmann::json::parse(read_file(dir / "replayed" / "summary.json"));
  EXPECT_EQ(a["iteration_time_s"], b["iteration_time_s"]);
  EXPECT_EQ(a["mfu"], b["mfu"]);
  EXPECT_EQ(a["tokens_per_s"], b["tokens_per_s"]);
  EXPECT_EQ(b["model"]["name"], "chakra:scenario");
  fs::remove_all(dir);
}

TEST(ChakraCli, AstraSimRingReplaysWithEveryOutput) {
  const fs::path out = fresh_dir("chakra-ring");
  const auto r =
      run_cli({"run", "scenarios/chakra-astra-sim-ring.yaml", "--html", "-q", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* file :
       {"summary.json", "timeline.csv", "per_gpu.csv", "per_stage.csv", "links.csv", "critical_path.csv",
        "trace.json", "gantt.svg", "bubbles.svg", "memory.svg", "report.html", "run.trainsim"})
    EXPECT_TRUE(fs::exists(out / file)) << file;
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  const double t = summary["iteration_time_s"].get<double>();
  // 14 dependent steps of 128 KiB at NVLink speed plus 7 reductions of 7 us:
  // tens of microseconds, not milliseconds.
  EXPECT_GT(t, 7 * 7e-6);
  EXPECT_LT(t, 1e-3);
  const std::string timeline = read_file(out / "timeline.csv");
  EXPECT_NE(timeline.find(",COMM_SEND_NODE_tb0_step0,"), std::string::npos);
  EXPECT_NE(timeline.find(",compute,COMP_NODE_tb0_step1,"), std::string::npos);
  // `trainsim report` regenerates it from the trace files.
  const auto again = run_cli({"report", out.string(), "--out", (out / "again").string(), "-q"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(read_file(out / "timeline.csv"), read_file(out / "again" / "timeline.csv"));
  fs::remove_all(out);
}

TEST(ChakraCli, RunChakraOptionReplaysATraceOnTheScenariosCluster) {
  const auto scenario =
      write_temp_file("scenario.yaml", "cluster:\n  gpu: A100-80GB\n  nodes: 1\n  gpus_per_node: 4\n");
  const fs::path out = fresh_dir("chakra-option");
  const auto r =
      run_cli({"run", scenario.string(), "--chakra", "tests/fixtures/chakra/astra-sim/all_reduce_4npus_1MB",
               "-q", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(summary["model"]["name"], "chakra:all_reduce_4npus_1MB");
  EXPECT_GT(summary["iteration_time_s"].get<double>(), 0);
  fs::remove_all(out);
}

TEST(ChakraCli, AStragglerSlowsTheTracesComputeAndALinkFaultItsTransfers) {
  const auto base = write_temp_file("scenario.yaml", trace_scenario(kRing));
  const fs::path out = fresh_dir("chakra-perturbed");
  const auto plain = run_cli({"run", base.string(), "-q", "--out", (out / "plain").string()});
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto slow = run_cli({"run", base.string(), "-q", "--out", (out / "slow").string(), "--set",
                             "perturbations.slow_gpus=[{gpus: [3], speed: 0.25}]"});
  ASSERT_EQ(slow.status, 0) << slow.err;
  const auto link = run_cli({"run", base.string(), "-q", "--out", (out / "link").string(), "--set",
                             "perturbations.links=[{links: [gpu5-nvlink], bandwidth_factor: 0.1}]"});
  ASSERT_EQ(link.status, 0) << link.err;
  const auto time = [&](const char* name) {
    return nlohmann::json::parse(read_file(out / name / "summary.json"))["iteration_time_s"].get<double>();
  };
  EXPECT_GT(time("slow"), time("plain") + 3 * 7e-6);  // GPU 3's 7 reductions take 4x as long
  EXPECT_GT(time("link"), time("plain"));
  fs::remove_all(out);
}

TEST(ChakraCli, ModelAndPlanBesideAWorkloadAreBadInput) {
  const auto r = run_text(kSmallPipelineScenario + "workload:\n  chakra: " + kRing + "\n");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("scenario.yaml:7:3: model: a scenario with a `workload` section replays that trace"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("plan: a scenario with a `workload` section"), std::string::npos) << r.err;
}

TEST(ChakraCli, MoreRanksThanGpusIsBadInputNamingBoth) {
  const auto r = run_text(
      "cluster:\n  gpu: A100-80GB\n  nodes: 1\n  gpus_per_node: 4\nworkload:\n  chakra: " + kRing + "\n");
  expect_one_error(r, "6:", "workload.chakra", "the trace has 8 ranks but the cluster 4 GPUs");
}

TEST(ChakraCli, ExportOfATraceScenarioRoundTripsToo) {
  // A foreign trace, exported again by trainsim: the same tasks.
  const fs::path dir = fresh_dir("chakra-reexport");
  const auto r = run_cli({"export", "scenarios/chakra-astra-sim-ring.yaml", "--chakra", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto a =
      run_cli({"run", "scenarios/chakra-astra-sim-ring.yaml", "-q", "--out", (dir / "a").string()});
  const auto b =
      run_cli({"run", (dir / "chakra-astra-sim-ring.yaml").string(), "-q", "--out", (dir / "b").string()});
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(read_file(dir / "a" / "timeline.csv"), read_file(dir / "b" / "timeline.csv"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
