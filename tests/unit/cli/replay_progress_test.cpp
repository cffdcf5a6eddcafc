#include "sim/cli/replay_progress.hpp"

#include <gtest/gtest.h>

namespace trainsim::cli {
namespace {

sim::ReplayCost cost(double time_s, std::size_t flows, std::size_t fast_flows) {
  sim::ReplayCost c;
  c.gpus = 1024;
  c.tasks = 132000;
  c.flows = flows;
  c.fast_flows = fast_flows;
  c.time_s = time_s;
  c.fast_time_s = time_s * static_cast<double>(fast_flows) / static_cast<double>(flows);
  c.memory_bytes = 2.5 * (1ULL << 30);
  return c;
}

TEST(ReplayProgress, ACheapReplayGetsNoNote) {
  EXPECT_EQ(expensive_replay_note(cost(3, 100000, 100000), "--fidelity fast"), "");
}

TEST(ReplayProgress, AnExpensiveReplaySaysItsEstimateAndTheCheaperChoice) {
  const auto note = expensive_replay_note(cost(600, 33000000, 1000000), "--fidelity fast");
  EXPECT_EQ(
      note,
      "note: a long simulation: 1024 GPUs, 132k tasks and 33M network flows per iteration; estimated ~10m00s "
      "and ~2.5GiB of memory. Cheaper: --fidelity fast (1M flows, ~18s), exact where no two collectives "
      "share a link (docs/collectives.md)");
  // Already fast: nothing cheaper to offer.
  auto fast = cost(600, 1000000, 1000000);
  fast.detailed = false;
  EXPECT_EQ(expensive_replay_note(fast, "--fidelity fast").find("Cheaper"), std::string::npos);
}

TEST(ReplayProgress, TheLineSaysSimulatedTimeTasksRateAndTimeLeft) {
  const sim::ReplayProgress p{0.412, 12300, 45700, 0};
  EXPECT_EQ(replay_progress_text(p, nullptr, 2.0),
            "simulating: 412ms simulated, 12.3k/45.7k tasks (26.9%), 6150 tasks/s, ~5s left");
  // With an estimate that counts many more flows than tasks, flows measure the way done.
  auto c = cost(60, 1000000, 1000000);
  c.tasks = 45700;
  const sim::ReplayProgress q{0.412, 12300, 45700, 500000};
  EXPECT_NE(replay_progress_text(q, &c, 2.0).find("~2s left"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::cli
