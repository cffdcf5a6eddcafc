#pragma once
// What a running study shows on stderr: on a terminal, one progress bar
// redrawn in place (points done, failed, running, elapsed and time left) with
// failures printed above it; otherwise (a log file, a Slurm job) one plain
// line per finished point.
#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <mutex>
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

// One line of progress for long work that is not a study (run, plan,
// validate, collective). On a terminal it is redrawn in place; elsewhere
// (with --progress) a line is printed every ten seconds. Nothing shows in the
// first second, so quick work stays silent. A ticker thread redraws it
// ten times a second while started (the elapsed time moves even while the
// caller is busy); update() only replaces the text.
class ProgressLine {
 public:
  // `enabled`: show anything at all (a terminal, or --progress);
  // `in_place`: redraw one line (a terminal) rather than print lines.
  ProgressLine(std::ostream& out, bool enabled, bool in_place);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The status text, without the elapsed time (the line adds it). Thread-safe.
  void update(std::string text);
  // A line of its own (a note, a warning), printed above the status.
  void print_above(const std::string& line);
  // Starts / stops the ticker thread. Stop it before forking.
  void start_ticker();
  void stop_ticker();
  // Clears the line (and stops the ticker).
  void close();
  double elapsed_s() const;

 private:
  void draw_locked(bool force);
  void clear_locked();

  std::ostream& out_;
  bool enabled_;
  bool in_place_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  std::string text_;
  bool shown_ = false;
  struct Ticker;
  std::unique_ptr<Ticker> ticker_;
  mutable std::mutex mutex_;
};

// Whether long work shows a progress line: on a terminal, or when asked for
// (--progress); and whether it redraws in place (a terminal).
bool progress_wanted(bool forced);
bool stderr_is_terminal();

// "12.3k" for counts in progress lines and rates.
std::string format_count_short(double count);

// The terminal's width in columns (80 when stderr is not a terminal).
int terminal_width();
// bar when stderr is a terminal, lines otherwise.
ProgressStyle default_progress_style();

}  // namespace trainsim::sim
