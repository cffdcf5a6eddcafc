#include "sim/replay/progress_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace trainsim::sim {

ProgressLine::ProgressLine(std::ostream& out, std::size_t total_tasks, std::function<double()> wall_s)
    : out_(out), total_(total_tasks), wall_s_(std::move(wall_s)) {
  if (!wall_s_)
    wall_s_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  start_s_ = wall_s_();
}

void ProgressLine::update(std::size_t done_tasks, double simulated_s) {
  if (++calls_ % kCallsPerClockRead != 0)
    return;
  const double now_s = wall_s_();
  const double elapsed_s = now_s - start_s_;
  if (elapsed_s < kQuiet_s || (last_print_s_ >= 0 && now_s - last_print_s_ < kInterval_s))
    return;
  last_print_s_ = now_s;
  const double rate = static_cast<double>(done_tasks) / elapsed_s;
  const double left_s = rate > 0 ? static_cast<double>(total_ - std::min(done_tasks, total_)) / rate : 0;
  std::string line = fmt::format(
      "simulated {:.4f} s | tasks {} / {} ({:.0f}%) | {:.0f} tasks/s | ETA {:.0f} s", simulated_s, done_tasks,
      total_, total_ > 0 ? 100.0 * static_cast<double>(done_tasks) / static_cast<double>(total_) : 100.0,
      rate, left_s);
  // Rewritten in place: \r, then blanks over what a longer line left.
  const std::size_t length = line.size();
  if (length < width_)
    line.append(width_ - length, ' ');
  width_ = length;
  out_ << '\r' << line << std::flush;
  printed_ = true;
}

void ProgressLine::finish() {
  if (printed_)
    out_ << '\n' << std::flush;
  printed_ = false;
}

}  // namespace trainsim::sim
