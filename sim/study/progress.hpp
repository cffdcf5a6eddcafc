#pragma once
// What a running study shows on stderr: on a terminal, one progress bar
// redrawn in place (points done, failed, running, elapsed and time left) with
// failures printed above it; otherwise (a log file, a Slurm job) one plain
// line per finished point.
#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>

namespace trainsim::sim {

enum class ProgressStyle { bar, lines, none };

// "42s", "3m05s", "1h02m", "2d03h".
std::string format_time_left(double seconds);

struct ProgressCounts {
  std::size_t total = 0;  // points this run simulates
  std::size_t done = 0;   // finished, successfully or not
  std::size_t failed = 0;
  std::size_t running = 0;
};

// Time left from the pace so far (elapsed / done x remaining); nullopt
// before the first point finishes.
std::optional<double> estimate_time_left_s(const ProgressCounts& counts, double elapsed_s);

// "[#######-------] 12/40  1 failed  2 running  0m42s elapsed  ~1m10s left",
// fitted to `width` columns.
std::string progress_bar_line(const ProgressCounts& counts, double elapsed_s, int width);

class Progress {
 public:
  Progress(std::ostream& out, ProgressStyle style, std::size_t total);
  void started();
  // A point finished: `ok` false for a failure, whose `detail` is the error.
  void finished(const std::string& id, const std::string& label, bool ok, double wall_s,
                const std::string& detail);
  // Redraws the bar (at most a few times a second).
  void tick();
  // Clears the bar.
  void close();
  const ProgressCounts& counts() const { return counts_; }

 private:
  double elapsed_s() const;
  void draw();
  void clear_bar();

  std::ostream& out_;
  ProgressStyle style_;
  ProgressCounts counts_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool bar_shown_ = false;
  bool dirty_ = false;  // counts changed since the bar was drawn
};

// The terminal's width in columns (80 when stderr is not a terminal).
int terminal_width();
// bar when stderr is a terminal, lines otherwise.
ProgressStyle default_progress_style();

}  // namespace trainsim::sim
