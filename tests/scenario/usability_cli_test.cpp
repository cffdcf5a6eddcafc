// What a new user meets first, through the real CLI: the labels say what ran
// and why, the errors say how to fix a what-if, the names and size syntax
// users know from Megatron-LM and nccl-tests work, and long work shows
// progress and warns before an expensive run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.hpp"
#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

// The shipped scenarios fix dp; resizing the cluster says how to derive it.
TEST(UsabilityCli, AResizedClusterWithAFixedDpSuggestsDpAuto) {
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "--quiet", "--set", "plan.pp=4", "--set",
                          "cluster.nodes=16", "--out", fresh_dir("dp-auto").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("or dp: auto (--set plan.dp=auto) to derive dp = 128 / 8 = 16"), std::string::npos)
      << r.err;
  const auto ok = run_summary({"run", "scenarios/quickstart.yaml", "--set", "plan.pp=4", "--set",
                               "cluster.nodes=16", "--set", "plan.dp=auto"});
  EXPECT_EQ(ok["plan"]["dp"], 16);
}

// A preset chosen with --set swaps the hardware and says what it replaced.
TEST(UsabilityCli, APresetGivenWithSetReplacesTheFilesClusterKeysAndSaysWhich) {
  CliResult r;
  const auto s = run_summary({"run", "scenarios/quickstart.yaml", "--set", "cluster.preset=dgx-h100-ndr",
                              "--set", "cluster.nodes=2"},
                             &r);
  EXPECT_EQ(s["cluster"]["groups"][0]["gpu"], "H100-SXM") << s["cluster"].dump();
  EXPECT_EQ(s["cluster"]["groups"][0]["nvlink_bandwidth_Bps"], 450000000000LL);
  EXPECT_EQ(s["cluster"]["fabric"], "rail_optimised");
  EXPECT_EQ(s["cluster"]["nodes"], 2);
  EXPECT_NE(
      r.err.find("note: --set cluster.preset=dgx-h100-ndr: the preset's values replace the scenario's own "
                 "cluster keys gpu, gpus_per_node, nvlink, nic, fabric"),
      std::string::npos)
      << r.err;
}

TEST(UsabilityCli, AMixedClusterIsNamedByEveryGpuType) {
  const auto r = run_cli({"run", "scenarios/hetero-a100-h100.yaml", "--out", fresh_dir("mixed").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cluster      32 GPUs on 4 nodes (16 A100-SXM-80GB + 16 H100-SXM)"), std::string::npos)
      << r.out;
  // Slower ops come from the slower GPU type, not from stragglers.
  EXPECT_EQ(r.out.find("without stragglers"), std::string::npos) << r.out;
}

TEST(UsabilityCli, WithoutStragglersOnlyWhenThereAreStragglersAndNoFloatsForPeople) {
  const auto plain = run_cli({"run", "scenarios/quickstart.yaml", "--out", fresh_dir("plain").string()});
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out.find("without stragglers"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("e+0"), std::string::npos) << plain.out;  // no 1.609e+05
  EXPECT_NE(plain.out.find("k\n"), std::string::npos) << plain.out;  // tokens / s  161k
  EXPECT_NE(plain.out.find("up to 1 flow at once"), std::string::npos) << plain.out;
  const auto slow = run_cli({"run", "scenarios/quickstart.yaml", "--out", fresh_dir("slow").string(), "--set",
                             "perturbations={slow_gpus: [{gpus: [0], speed: 0.5}]}"});
  ASSERT_EQ(slow.status, 0) << slow.err;
  EXPECT_NE(slow.out.find("without stragglers"), std::string::npos) << slow.out;
}

TEST(UsabilityCli, SeedsOnASeedIndependentScenarioSayWhyTheSpreadIsZero) {
  const auto r =
      run_cli({"run", "scenarios/quickstart.yaml", "--seeds", "2", "--out", fresh_dir("seeds").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("no spread: nothing in this scenario that changes the iteration is random"),
            std::string::npos)
      << r.out;
}

// Megatron-LM's names for the model and plan keys, through --set.
TEST(UsabilityCli, MegatronArgumentNamesWorkInSetAndSlipsGetADidYouMean) {
  const auto s =
      run_summary({"run", "scenarios/quickstart.yaml", "--set", "plan.tensor_model_parallel_size=4", "--set",
                   "plan.pipeline-model-parallel-size=2", "--set", "model.num_layers=8"});
  EXPECT_EQ(s["plan"]["tp"], 4);
  EXPECT_EQ(s["plan"]["pp"], 2);
  EXPECT_EQ(s["model"]["layers"], 8);
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "--set", "plan.shedule=zb_h1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("plan.shedule: unknown key (did you mean 'schedule'?"), std::string::npos) << r.err;
  const auto word = run_cli({"run", "scenarios/quickstart.yaml", "--set", "plan.schedule=1fb1"});
  EXPECT_NE(word.err.find("(did you mean '1f1b'?)"), std::string::npos) << word.err;
  const auto bandwidth =
      run_summary({"run", "scenarios/quickstart.yaml", "--set", "cluster.nic.bandwidth=400gbps"});
  EXPECT_EQ(bandwidth["cluster"]["groups"][0]["nic_bandwidth_Bps"], 50000000000LL);
  EXPECT_EQ(bandwidth["cluster"]["groups"][0]["nic_latency_s"].get<double>(), 5e-06);
}

// nccl-tests' size syntax and flags.
TEST(UsabilityCli, CollectiveTakesNcclTestsSizesAndFlags) {
  const auto r = run_cli({"collective", "-g", "8", "-b", "8", "-e", "1M", "-f", "32", "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\n8,2,"), std::string::npos) << r.out;           // 8 bytes, 2 floats
  EXPECT_NE(r.out.find("\n262144,65536,"), std::string::npos) << r.out;  // 8 x 32^3
  const auto m = run_cli({"collective", "-b", "1K", "-e", "1m", "-f", "1024", "--format", "csv"});
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find("\n1024,256,"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("\n1048576,262144,"), std::string::npos) << m.out;
}

// nvls asked for on A100 nodes: what ran, and why.
TEST(UsabilityCli, AnUnavailableAlgorithmIsNamedWithWhyAndWhatRanInstead) {
  const auto r = run_cli({"collective", "--algorithm", "nvls", "-b", "1M", "-e", "4M"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("# algorithm nvls asked (not available)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvls needs NVLink SHARP in every node's NVSwitch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ran ring instead"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("note: nvls was asked for but cannot run here"), std::string::npos) << r.err;
  std::istringstream rows(r.out);
  for (std::string line; std::getline(rows, line);) {
    if (!line.empty() && line[0] != '#') {
      EXPECT_EQ(line.find("nvls"), std::string::npos) << line;  // no row claims nvls
    }
  }
  const auto h100 =
      run_cli({"collective", "--cluster", "dgx-h100-ndr", "--algorithm", "nvls", "-b", "1M", "-e", "4M"});
  EXPECT_EQ(h100.out.find("not available"), std::string::npos) << h100.out;
  EXPECT_NE(h100.out.find(" nvls "), std::string::npos) << h100.out;
}

// --progress shows the line where stderr is no terminal (a line every 10 s,
// the first after a second); without it, a log stays clean. The run is one
// that takes seconds on any machine (512 GPUs, 66k tasks): a quick one would
// rightly stay silent and make the test depend on the machine's speed.
TEST(UsabilityCli, ProgressShowsALineInALogWhenAskedFor) {
  const std::vector<std::string> big{"run", "scenarios/scale-512.yaml", "--quiet"};
  // scale-512 itself now runs in under a second, before the first line: the
  // same shape on 2,048 GPUs runs for a few.
  const auto with_out = fresh_dir("progress");
  auto with = big;
  with.insert(with.end(), {"--set", "cluster.nodes=256", "--set", "plan.dp=32", "--set",
                           "plan.global_batch_size=1024", "--progress", "--out", with_out.string()});
  const auto r = run_cli(with);
  ASSERT_EQ(r.status, 0) << r.err;
  // Whatever stage the first line (after a second) catches: on a loaded
  // machine that may still be the graph build.
  EXPECT_TRUE(r.err.find("building the task graph") != std::string::npos ||
              r.err.find("simulating") != std::string::npos ||
              r.err.find("writing the outputs") != std::string::npos)
      << r.err;
  const auto without_out = fresh_dir("no-progress");
  auto without = big;
  without.insert(without.end(), {"--out", without_out.string()});
  const auto quiet = run_cli(without);
  EXPECT_EQ(quiet.err, "");
  // Each 2,048-GPU run writes ~200 MB: a passing test leaves none of it.
  std::filesystem::remove_all(with_out);
  std::filesystem::remove_all(without_out);
}

}  // namespace
}  // namespace trainsim::testing
