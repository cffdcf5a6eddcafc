// The replay's progress line on a clock the test drives: silent for short
// runs, then one line rewritten in place with the rate and the time left.
#include "sim/replay/progress_line.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace trainsim::sim {
namespace {

struct Driven {
  double wall_s = 100;
  std::ostringstream out;
  ProgressLine line{out, 10'000, [this] { return wall_s; }};

  // `calls` finished tasks, the clock moved to `elapsed_s` after the start.
  void finish_tasks(std::size_t done, double elapsed_s) {
    wall_s = 100 + elapsed_s;
    for (std::size_t k = 0; k < ProgressLine::kCallsPerClockRead; ++k)
      line.update(done, 0.5);
  }
};

TEST(ProgressLine, SaysNothingDuringTheFirstTwoSeconds) {
  Driven d;
  d.finish_tasks(1'000, 1.9);
  d.line.finish();
  EXPECT_EQ(d.out.str(), "");
}

TEST(ProgressLine, ReportsSimulatedTimeTasksRateAndTimeLeft) {
  Driven d;
  d.finish_tasks(2'500, 2.5);  // 1,000 tasks/s, 7,500 left
  EXPECT_EQ(d.out.str(), "\rsimulated 0.5000 s | tasks 2500 / 10000 (25%) | 1000 tasks/s | ETA 8 s");
}

TEST(ProgressLine, RewritesItsLineAtMostOnceASecondAndEndsIt) {
  Driven d;
  d.finish_tasks(2'500, 2.5);
  const auto first = d.out.str();
  d.finish_tasks(2'600, 3.0);  // half a second later: not yet
  EXPECT_EQ(d.out.str(), first);
  d.finish_tasks(10'000, 5.0);
  d.line.finish();
  const auto text = d.out.str();
  EXPECT_NE(text.find("\rsimulated 0.5000 s | tasks 10000 / 10000 (100%) | 2000 tasks/s | ETA 0 s"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace trainsim::sim
