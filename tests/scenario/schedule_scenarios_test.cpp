// The shipped schedule comparison (scenarios/schedule-*.yaml, table in
// docs/schedules.md): each scenario runs through the real CLI, and its
// iteration time stands where the schedule's design puts it against the
// 1F1B baseline on the same model, cluster and plan. Two CLI runs per test,
// each in its own process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

struct Result {
  std::string schedule;
  double iteration_time_s = 0;
  double bubble_fraction = 0;
  double mfu = 0;
};

Result run_scenario(const std::string& file, const std::vector<std::string>& sets = {},
                    bool allow_oom = false) {
  const auto out = fresh_dir("schedule");
  std::vector<std::string> args = {"run", "scenarios/" + file, "--quiet", "--out", out.string()};
  if (allow_oom)
    args.push_back("--allow-oom");
  for (const auto& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << file << ": " << r.err;
  Result result;
  if (r.status == 0) {
    const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
    result = {summary["plan"]["schedule"].get<std::string>(), summary["iteration_time_s"].get<double>(),
              summary["bubble_fraction"].get<double>(), summary["mfu"].get<double>()};
  }
  std::filesystem::remove_all(out);
  return result;
}

// How a schedule's iteration time must compare with 1F1B's.
enum class Expect { same, faster, slower };

struct Case {
  std::string file;
  std::string word;
  Expect expect;
  // GPipe holds all 16 micro-batches' activations: 113 GiB per GPU here, more
  // than an A100's 80 GiB (docs/schedules.md), so it runs only with --allow-oom.
  bool allow_oom = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.file;
}

class ScheduleScenario : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleScenario, RunsAndStandsWhereItsDesignPutsItAgainstOneFOneB) {
  const auto& c = GetParam();
  const auto baseline = run_scenario("schedule-1f1b.yaml");
  const auto result = run_scenario(c.file, {}, c.allow_oom);
  EXPECT_EQ(result.schedule, c.word);
  EXPECT_GT(result.mfu, 0.05);
  EXPECT_LT(result.mfu, 1.0);
  switch (c.expect) {
    case Expect::same:  // GPipe: same bubble, same order of work per stage
      EXPECT_NEAR(result.iteration_time_s, baseline.iteration_time_s, 1e-3 * baseline.iteration_time_s);
      break;
    case Expect::faster:  // less bubble: interleaving, zero-bubble, DualPipe-V, DualPipe
      EXPECT_LT(result.iteration_time_s, 0.99 * baseline.iteration_time_s);
      EXPECT_LT(result.bubble_fraction, baseline.bubble_fraction);
      break;
    case Expect::slower:  // BPipe: its evictions cross InfiniBand here
      EXPECT_GT(result.iteration_time_s, 1.1 * baseline.iteration_time_s);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, ScheduleScenario,
                         ::testing::Values(Case{"schedule-gpipe.yaml", "gpipe", Expect::same, true},
                                           Case{"schedule-interleaved-1f1b.yaml", "interleaved_1f1b",
                                                Expect::faster},
                                           Case{"schedule-zb-h1.yaml", "zb_h1", Expect::faster},
                                           Case{"schedule-zb-h2.yaml", "zb_h2", Expect::faster},
                                           Case{"schedule-zb-v.yaml", "zb_v", Expect::faster},
                                           Case{"schedule-dualpipe-v.yaml", "dualpipe_v", Expect::faster},
                                           Case{"schedule-dualpipe.yaml", "dualpipe", Expect::faster},
                                           Case{"schedule-bpipe.yaml", "bpipe", Expect::slower}),
                         [](const auto& info) { return info.param.word; });

// The memory model stops GPipe's 16 micro-batches before they run; the
// other schedules of the comparison fit (they run above without the flag).
TEST(ScheduleScenario, GPipeDoesNotFitWithoutAllowOom) {
  const auto r =
      run_cli({"run", "scenarios/schedule-gpipe.yaml", "--quiet", "--out", fresh_dir("gpipe-oom").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("plan: does not fit in GPU memory: GPU 0 (pipeline stage 0, node 0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(16 micro-batch forwards held)"), std::string::npos) << r.err;
  // One error, not one per stage: the other stages are named in it.
  EXPECT_EQ(r.err.find("does not fit", r.err.find("does not fit") + 1), std::string::npos) << r.err;
  EXPECT_NE(
      r.err.find("; nor do stage 1 (112GiB on GPU 4), stage 2 (112GiB on GPU 8), stage 3 (120GiB on GPU "
                 "12); expected a plan that fits"),
      std::string::npos)
      << r.err;
}

// BPipe's transfers are real: over fast links (a fabric as fast as NVLink)
// they hide under compute and BPipe comes close to 1F1B; over the shipped
// 200 Gb/s links they dominate (the test above).
TEST(ScheduleScenario, BPipeApproachesOneFOneBWhenItsLinksAreFast) {
  // A 2400 Gb/s NIC needs a PCIe path that keeps up with it (PCIe Gen4
  // x16, 32 GB/s, would otherwise cap every transfer between the nodes).
  const std::vector<std::string> fast = {"cluster.nic.bandwidth=2400Gbps", "cluster.pcie.bandwidth=400GBps"};
  const auto baseline = run_scenario("schedule-1f1b.yaml", fast);
  const auto bpipe = run_scenario("schedule-bpipe.yaml", fast);
  EXPECT_GE(bpipe.iteration_time_s, baseline.iteration_time_s * (1 - 1e-9));
  EXPECT_LT(bpipe.iteration_time_s, 1.1 * baseline.iteration_time_s);
}

// plan.p2p's default became Megatron-core's for 1F1B (sync: blocking
// batched send / receive) in a documented fidelity change; the shift it
// brought the shipped 1F1B scenario, pinned: 1.5420 s with the old
// behaviour (async, posted ahead), 1.5427 s now (+0.04%: 10 MiB
// transfers, about 0.45 ms over the one stage boundary that crosses
// InfiniBand and 0.05 ms over NVLink; 16 micro-batches).
TEST(ScheduleScenario, BlockingSendsAreTheOneFOneBDefaultAndCostItsShippedScenarioWellUnderOnePercent) {
  const auto out = fresh_dir("p2p-default");
  const auto r = run_cli({"run", "scenarios/schedule-1f1b.yaml", "--quiet", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  std::filesystem::remove_all(out);
  EXPECT_EQ(summary["plan"]["p2p"], "sync");
  const double sync = summary["iteration_time_s"].get<double>();
  const double async = run_scenario("schedule-1f1b.yaml", {"plan.p2p=async"}).iteration_time_s;
  // Since the tied-embedding all-reduce between the first and last stage
  // (docs/parallelism.md, a documented fidelity change: gpt3-2.7b ties its
  // embeddings) both pay about 5.7 ms more; before it they were 1.54268 /
  // 1.54203.
  EXPECT_NEAR(sync, 1.54836, 1e-4);
  EXPECT_NEAR(async, 1.54771, 1e-4);
  EXPECT_GT(sync - async, 0.4e-3);
  EXPECT_LT(sync - async, 0.9e-3);
}

}  // namespace
}  // namespace trainsim::testing
