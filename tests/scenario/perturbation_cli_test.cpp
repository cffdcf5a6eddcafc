// Perturbations through the real CLI: --iterations, --seeds, the summary.json
// blocks, determinism per seed, and errors for bad input. Each TEST runs the
// binary (one simulation per process, several for --seeds).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_summary.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {

const std::string kScenario = "name: stragglers\nseed: 3\n" + kSmallPipelineScenario + R"(perturbations:
  stragglers:
    probability: 0.2
    speed: {distribution: uniform, min: 0.5, max: 0.9}
    duration: {distribution: fixed, value: 50ms}
)";

// Failures every 100 GPU-hours over 48 h: several per run on 16 GPUs.
const std::string kFailures = R"(  failures:
    gpu_mtbf: 100h
    restart_delay: 5min
    checkpoint_interval: 30min
    storage_bandwidth: 10GBps
    run_time: 48h
)";

// `trainsim run` on the text written to a fresh scenario.yaml, plus `extra`.
nlohmann::json run_and_read(const std::string& yaml, const std::vector<std::string>& extra,
                            CliResult* result = nullptr) {
  std::vector<std::string> args{"run", write_temp_file("scenario.yaml", yaml).string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_summary(args, result);
}

TEST(PerturbationCli, IterationsBlockAndSameSeedSameTimesOtherSeedOthers) {
  const auto a = run_and_read(kScenario, {"--iterations", "6"});
  const auto b = run_and_read(kScenario, {"--iterations", "6"});
  const auto c = run_and_read(kScenario, {"--iterations", "6", "--set", "seed=4"});
  const auto& it = a["iterations"];
  ASSERT_EQ(it["times_s"].size(), 6u);
  EXPECT_EQ(it["count"], 6);
  EXPECT_GE(it["max_s"].get<double>(), it["p99_s"].get<double>());
  EXPECT_GE(it["p99_s"].get<double>(), it["p50_s"].get<double>());
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_NE(a["iterations"]["times_s"], c["iterations"]["times_s"]);
  EXPECT_GT(a["perturbations"]["straggler_episodes"].get<int>(), 0);
  // The report describes the first iteration.
  EXPECT_DOUBLE_EQ(a["iteration_time_s"].get<double>(), it["times_s"][0].get<double>());
}

TEST(PerturbationCli, SeedsGiveAConfidenceInterval) {
  CliResult r;
  const auto j = run_and_read(kScenario, {"--iterations", "3", "--seeds", "3"}, &r);
  const auto& s = j["seeds"];
  ASSERT_EQ(s["runs"].size(), 3u);
  EXPECT_EQ(s["runs"][0]["seed"], 3);
  EXPECT_EQ(s["runs"][2]["seed"], 5);
  double mean = 0;
  for (const auto& run : s["runs"])
    mean += run["mean_iteration_time_s"].get<double>() / 3;
  EXPECT_NEAR(s["mean_iteration_time_s"].get<double>(), mean, 1e-12);
  EXPECT_GE(s["ci95_half_width_s"].get<double>(), 0);
}

TEST(PerturbationCli, FailuresReportGoodputWhoseSharesAddUp) {
  const std::string yaml = kScenario + kFailures;
  CliResult r;
  const auto j = run_and_read(yaml, {"--iterations", "2"}, &r);
  const auto& f = j["failures"];
  double sum = 0;
  for (const auto& [key, value] : f["share"].items())
    sum += value.get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_GT(f["failures"].get<int>(), 0);
  EXPECT_LT(f["goodput_tokens_per_hour"].get<double>(), f["ideal_tokens_per_hour"].get<double>());
  // 1.3B parameters x 14 bytes at 10 GB/s.
  EXPECT_NEAR(f["checkpoint_write_s"].get<double>(), j["model"]["parameters"].get<double>() * 14 / 10e9,
              1e-9);
}

// Without random stragglers the replay does not depend on the seed: --seeds
// replays once and runs the job-level failure simulation once per seed. Each
// seed's goodput must be the one a separate run with that seed gives.
TEST(PerturbationCli, SeedsShareOneReplayWhenOnlyFailuresDrawFromThem) {
  const std::string yaml = kScenario.substr(0, kScenario.find("  stragglers:")) + kFailures;
  const auto shared = run_and_read(yaml, {"--seeds", "3"});
  const auto& runs = shared["seeds"]["runs"];
  ASSERT_EQ(runs.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const auto alone = run_and_read(yaml, {"--set", "seed=" + std::to_string(3 + k)});
    EXPECT_EQ(runs[k]["seed"], 3 + k);
    EXPECT_DOUBLE_EQ(runs[k]["mean_iteration_time_s"].get<double>(), alone["iteration_time_s"].get<double>());
    EXPECT_NEAR(runs[k]["goodput_tokens_per_hour"].get<double>(),
                alone["failures"]["goodput_tokens_per_hour"].get<double>(),
                1e-9 * alone["failures"]["goodput_tokens_per_hour"].get<double>());
    EXPECT_EQ(runs[k]["failures"], alone["failures"]["failures"]);
    for (const auto& [part, value] : alone["failures"]["share"].items())
      EXPECT_NEAR(runs[k]["share"][part].get<double>(), value.get<double>(), 1e-9) << part;
  }
  // The mean shares over the seeds still add up to the whole run.
  double sum = 0;
  for (const auto& [part, value] : shared["seeds"]["share_mean"].items()) {
    double mean = 0;
    for (const auto& run : runs)
      mean += run["share"][part].get<double>() / 3;
    EXPECT_NEAR(value.get<double>(), mean, 1e-12) << part;
    sum += value.get<double>();
  }
  EXPECT_NEAR(sum, 1.0, 1e-9);
  // Different seeds draw different failures.
  EXPECT_NE(runs[0]["goodput_tokens_per_hour"], runs[1]["goodput_tokens_per_hour"]);
  EXPECT_EQ(shared["seeds"]["ci95_half_width_s"].get<double>(), 0.0);
}

// With random stragglers each extra seed runs in a child process: its
// failure figures come back through the pipe whole.
TEST(PerturbationCli, SeedsInChildProcessesReportTheirFailureShares) {
  const auto j = run_and_read(kScenario + kFailures, {"--seeds", "2"});
  const auto& runs = j["seeds"]["runs"];
  ASSERT_EQ(runs.size(), 2u);
  const auto alone = run_and_read(kScenario + kFailures, {"--set", "seed=4"});
  EXPECT_EQ(runs[1]["failures"], alone["failures"]["failures"]);
  EXPECT_EQ(runs[1]["goodput_tokens_per_hour"], alone["failures"]["goodput_tokens_per_hour"]);
  for (const auto& [part, value] : alone["failures"]["share"].items())
    EXPECT_EQ(runs[1]["share"][part], value) << part;
}

TEST(PerturbationCli, BadPerturbationIsAnInputErrorWithItsLine) {
  const auto path =
      write_temp_file("scenario.yaml", kScenario + "  links:\n    - {links: [leaf7-uplink], down: true}\n");
  const auto r = run_cli({"run", path.string(), "-q", "--out", (path.parent_path() / "out").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(
      r.err.find(
          "scenario.yaml:22:16: perturbations.links.0.links: 'leaf7-uplink' is not a link of this cluster"),
      std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("Backtrace"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::testing
