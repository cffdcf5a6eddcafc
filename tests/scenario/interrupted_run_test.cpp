// kill -9 at any moment of a 512-GPU run (scenarios/scale-512.yaml) leaves
// its folder either complete (run.complete lists every file, each whole) or
// marked unfinished (no run.complete), never a complete-looking folder with a
// cut file. The kills land at fractions of a measured full run, so some fall
// in the replay and some while the ~95 MB of outputs are written.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "support/cli.hpp"
#include "support/stopped_cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

pid_t start_run(const fs::path& out) {
  return start_trainsim({"run", "scenarios/scale-512.yaml", "-q", "--out", out.string()});
}

TEST(InterruptedRun, KillNineAtAnyMomentLeavesACompleteOrAnUnfinishedFolder) {
  const auto out = fresh_dir("interrupted") / "run";
  const auto start = Clock::now();
  ASSERT_EQ(wait_for(start_run(out)), 0);
  const double full_s = std::chrono::duration<double>(Clock::now() - start).count();
  expect_consistent(out, "after a full run");
  ASSERT_TRUE(fs::exists(out / "run.complete"));

  int unfinished = 0;
  for (double fraction : {0.3, 0.6, 0.8, 0.88, 0.94, 0.98}) {
    const pid_t pid = start_run(out);
    std::this_thread::sleep_for(std::chrono::duration<double>(fraction * full_s));
    ::kill(pid, SIGKILL);
    const int status = wait_for(pid);
    const std::string when = "killed at " + std::to_string(fraction) + " of " + std::to_string(full_s) + " s";
    expect_consistent(out, when);
    unfinished += status != 0 && !fs::exists(out / "run.complete");
  }
  // Some kills landed while the outputs were written (else the test shows nothing).
  EXPECT_GT(unfinished, 0);
  ASSERT_EQ(wait_for(start_run(out)), 0);
  expect_consistent(out, "after a run to the end");
  EXPECT_TRUE(fs::exists(out / "run.complete"));
  for (const auto& entry : fs::directory_iterator(out))
    EXPECT_NE(entry.path().extension(), ".partial") << entry.path();
}

}  // namespace
}  // namespace trainsim::testing
