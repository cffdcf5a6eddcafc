#pragma once
// The progress line a long replay keeps on stderr: simulated time, tasks
// done out of the total, the rate, and the time left at that rate. It stays
// silent for the first two seconds (short runs print nothing), then rewrites
// one line at most once a second; finish() ends it. The replay calls
// update() for every finished task, so update() reads the clock only every
// so many calls.
#include <cstddef>
#include <functional>
#include <ostream>

namespace trainsim::sim {

class ProgressLine {
 public:
  // `wall_s`: a monotonic clock in seconds (steady_clock unless a test
  // drives it).
  ProgressLine(std::ostream& out, std::size_t total_tasks, std::function<double()> wall_s = {});

  void update(std::size_t done_tasks, double simulated_s);
  void finish();

  static constexpr double kQuiet_s = 2;     // nothing before this much wall time
  static constexpr double kInterval_s = 1;  // between two rewrites
  static constexpr std::size_t kCallsPerClockRead = 256;

 private:
  std::ostream& out_;
  std::size_t total_;
  std::function<double()> wall_s_;
  double start_s_;
  double last_print_s_ = -1;
  std::size_t calls_ = 0;
  std::size_t width_ = 0;  // of the line printed last
  bool printed_ = false;
};

}  // namespace trainsim::sim
