// The worker pool, with a stand-in for the trainsim binary (a shell script),
// so that failures, crashes, resume and interruption are tested without
// simulating anything.
#include "sim/study/point_runner.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "support/files.hpp"

namespace trainsim::sim {
namespace {
namespace fs = std::filesystem;

// Called as `run SCENARIO --out DIR --quiet`, like trainsim. Writes a summary
// with the scenario's `value`, unless the scenario says fail, crash or slow.
// Every call appends the scenario to calls.txt.
struct FakeTrainsim {
  fs::path dir = testing::fresh_dir("fake-trainsim");
  fs::path exe = dir / "fake-trainsim";
  fs::path calls = dir / "calls.txt";

  FakeTrainsim() {
    std::ofstream(exe)
        << "#!/bin/sh\n"
           "scenario=\"$2\"; out=\"$4\"\n"
           "echo \"$scenario\" >> '"
        << calls.string()
        << "'\n"
           "if grep -q fail \"$scenario\"; then echo 'some output'; echo 'error: boom' >&2; exit 1; fi\n"
           "if grep -q crash \"$scenario\"; then kill -9 $$; fi\n"
           "if grep -q slow \"$scenario\"; then exec sleep 30; fi\n"
           "value=$(sed -n 's/^value: //p' \"$scenario\")\n"
           "printf '{\"schema\": \"trainsim.summary/1\", \"value\": %s}\\n' \"$value\" > "
           "\"$out/summary.json\"\n"
           "echo t > \"$out/timeline.csv\"; echo t > \"$out/trace.json\"; echo t > \"$out/per_gpu.csv\"\n"
           "echo t > \"$out/gantt.svg\"; echo t > \"$out/run.trainsim\"\n";
    fs::permissions(exe, fs::perms::owner_all);
  }
  ~FakeTrainsim() { fs::remove_all(dir); }

  std::size_t call_count() const {
    std::ifstream in(calls);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);)
      ++n;
    return n;
  }
  RunnerOptions options(const fs::path& root, int jobs) const {
    RunnerOptions o;
    o.root = root;
    o.jobs = jobs;
    o.trainsim_exe = exe.string();
    o.progress = ProgressStyle::none;
    return o;
  }
};

std::vector<PointJob> jobs(const std::vector<std::string>& kinds) {
  std::vector<PointJob> out;
  for (std::size_t i = 0; i < kinds.size(); ++i)
    out.push_back(
        PointJob{fmt::format("{:04}", i), kinds[i], fmt::format("value: {}\n# {}\n", i * 10, kinds[i])});
  return out;
}

TEST(PointRunner, EveryPointRunsInItsOwnFolderAndOutcomesKeepTheJobOrder) {
  FakeTrainsim fake;
  const auto root = fake.dir / "points";
  const auto list = jobs({"ok", "ok", "ok", "ok", "ok"});
  std::ostringstream log;
  const auto outcomes = run_points(list, fake.options(root, 2), log);
  ASSERT_EQ(outcomes.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(outcomes[i].state, PointState::simulated);
    EXPECT_EQ(outcomes[i].summary["value"], i * 10);
    EXPECT_TRUE(fs::exists(root / list[i].id / "summary.json"));
    EXPECT_TRUE(fs::exists(root / list[i].id / "trace.json"));
    EXPECT_EQ(testing::read_file(root / list[i].id / "scenario.yaml"), list[i].scenario_yaml);
    EXPECT_FALSE(fs::exists(root / (list[i].id + ".partial")));
  }
  EXPECT_EQ(fake.call_count(), 5u);
}

TEST(PointRunner, FailuresAndCrashesAreRecordedWithTheErrorAndExitStatus) {
  FakeTrainsim fake;
  const auto root = fake.dir / "points";
  const auto list = jobs({"ok", "fail", "crash"});
  std::ostringstream log;
  const auto outcomes = run_points(list, fake.options(root, 2), log);
  EXPECT_EQ(outcomes[0].state, PointState::simulated);
  EXPECT_EQ(outcomes[1].state, PointState::failed);
  EXPECT_EQ(outcomes[1].exit_status, 1);
  EXPECT_EQ(outcomes[1].error, "boom (exit status 1)");
  EXPECT_EQ(outcomes[2].state, PointState::failed);
  EXPECT_EQ(outcomes[2].exit_status, 128 + 9);
  EXPECT_NE(outcomes[2].error.find("killed by signal 9"), std::string::npos) << outcomes[2].error;
  // The failed point's folder stays for its log, without a summary.
  EXPECT_TRUE(fs::exists(root / "0001" / "run.log"));
  EXPECT_FALSE(fs::exists(root / "0001" / "summary.json"));
  EXPECT_NE(testing::read_file(root / "0001" / "run.log").find("error: boom"), std::string::npos);
}

TEST(PointRunner, ResumeRerunsOnlyMissingChangedFailedAndHalfWrittenPoints) {
  FakeTrainsim fake;
  const auto root = fake.dir / "points";
  auto list = jobs({"ok", "ok", "ok", "ok", "fail", "ok"});
  std::ostringstream log;
  run_points(list, fake.options(root, 2), log);
  ASSERT_EQ(fake.call_count(), 6u);
  EXPECT_EQ(count_finished(list, root), 5u);

  fs::remove_all(root / "0001");                         // lost
  list[2].scenario_yaml += "# edited\n";                 // the study changed this point
  fs::create_directories(root / "0003.partial");         // debris of an interrupted run
  std::ofstream(root / "0005" / "summary.json") << "{";  // torn
  EXPECT_EQ(count_finished(list, root), 2u);

  const auto outcomes = run_points(list, fake.options(root, 2), log);
  // 0001, 0002, 0004 (failed before) and 0005 again; 0000 and 0003 reused.
  EXPECT_EQ(fake.call_count(), 6u + 4u);
  EXPECT_EQ(outcomes[0].state, PointState::reused);
  EXPECT_EQ(outcomes[3].state, PointState::reused);
  EXPECT_EQ(outcomes[3].summary["value"], 30);
  EXPECT_EQ(outcomes[1].state, PointState::simulated);
  EXPECT_EQ(outcomes[2].state, PointState::simulated);
  EXPECT_EQ(outcomes[5].state, PointState::simulated);
  EXPECT_EQ(outcomes[4].state, PointState::failed);
  EXPECT_FALSE(fs::exists(root / "0003.partial"));
  EXPECT_EQ(testing::read_file(root / "0002" / "scenario.yaml"), list[2].scenario_yaml);

  // Without resume, everything runs again.
  auto fresh = fake.options(root, 2);
  fresh.resume = false;
  run_points(list, fresh, log);
  EXPECT_EQ(fake.call_count(), 10u + 6u);
}

// --keep summary keeps what it says: summary.json (with scenario.yaml, to
// resume, and run.log), no table, trace, plot or archive.
TEST(PointRunner, KeepSummaryKeepsOnlyTheSummaryTheScenarioAndTheLog) {
  FakeTrainsim fake;
  const auto root = fake.dir / "points";
  auto options = fake.options(root, 1);
  options.keep = KeepOutputs::summary;
  std::ostringstream log;
  run_points(jobs({"ok"}), options, log);
  std::set<std::string> kept;
  for (const auto& entry : fs::directory_iterator(root / "0000"))
    kept.insert(entry.path().filename().string());
  EXPECT_EQ(kept, (std::set<std::string>{"run.log", "scenario.yaml", "summary.json"}));
}

TEST(PointRunner, AnInterruptionStopsTheWorkersKeepsFinishedPointsAndLeavesNoDebris) {
  FakeTrainsim fake;
  const auto root = fake.dir / "points";
  const auto list = jobs({"ok", "ok", "slow", "slow"});
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(::getpid(), SIGINT);
  });
  std::ostringstream log;
  const auto started = std::chrono::steady_clock::now();
  try {
    run_points(list, fake.options(root, 4), log);
    ADD_FAILURE() << "expected an interruption";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal(), SIGINT);
    EXPECT_EQ(e.total(), 4u);
    EXPECT_EQ(e.finished(), count_finished(list, root));
  }
  interrupter.join();
  // The slow workers were stopped, not waited for.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  for (const auto& job : list)
    EXPECT_FALSE(fs::exists(root / (job.id + ".partial"))) << job.id;
  EXPECT_FALSE(fs::exists(root / "0002"));
  EXPECT_FALSE(fs::exists(root / "0003"));
  // The handler is gone again: SIGINT is back to its default.
  struct sigaction now {};
  ::sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(PointRunner, ProgressLinesCountPointsAndShowFailures) {
  FakeTrainsim fake;
  auto options = fake.options(fake.dir / "points", 1);
  options.progress = ProgressStyle::lines;
  std::ostringstream log;
  run_points(jobs({"ok", "fail"}), options, log);
  const auto text = log.str();
  EXPECT_NE(text.find("[1/2] point 0000 ok in "), std::string::npos) << text;
  EXPECT_NE(text.find("[2/2] point 0001 FAILED in "), std::string::npos) << text;
  EXPECT_NE(text.find("fail: boom (exit status 1)"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainsim::sim
