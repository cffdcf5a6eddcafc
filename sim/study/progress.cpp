#include "sim/study/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <ostream>
#include <thread>

#include "platforms/interruption.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::sim {

std::string format_time_left(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s < 60)
    return fmt::format("{}s", s);
  if (s < 3600)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400)
    return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02}h", s / 86400, (s % 86400) / 3600);
}

std::optional<double> estimate_time_left_s(const ProgressCounts& c, double elapsed_s) {
  if (c.done == 0)
    return std::nullopt;
  return elapsed_s / static_cast<double>(c.done) * static_cast<double>(c.total - c.done);
}

std::string progress_bar_line(const ProgressCounts& c, double elapsed_s, int width) {
  std::string text = fmt::format(" {}/{}", c.done, c.total);
  if (c.failed > 0)
    text += fmt::format("  {} failed", c.failed);
  text += fmt::format("  {} running  {} elapsed", c.running, format_time_left(elapsed_s));
  const auto left = estimate_time_left_s(c, elapsed_s);
  text += left ? fmt::format("  ~{} left", format_time_left(*left)) : std::string("  estimating time left");
  // The bar keeps one width whatever the text says (it only depends on the
  // terminal's width); the text is cut, not the bar.
  const int bar_width = std::min(30, width / 4);
  if (bar_width < 5)
    return text.substr(1, static_cast<std::size_t>(std::max(0, width - 1)));
  const int filled =
      c.total == 0 ? bar_width : static_cast<int>(bar_width * static_cast<double>(c.done) / c.total);
  std::string line =
      fmt::format("[{}{}]{}", std::string(filled, '#'), std::string(bar_width - filled, '-'), text);
  if (static_cast<int>(line.size()) > width)
    line.resize(static_cast<std::size_t>(std::max(0, width)));
  return line;
}

Progress::Progress(std::ostream& out, ProgressStyle style, std::size_t total)
    : out_(out), style_(style), start_(std::chrono::steady_clock::now()) {
  counts_.total = total;
}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::started() {
  ++counts_.running;
  dirty_ = true;
}

void Progress::finished(const std::string& id, const std::string& label, bool ok, double wall_s,
                        const std::string& detail) {
  --counts_.running;
  ++counts_.done;
  counts_.failed += ok ? 0 : 1;
  if (style_ == ProgressStyle::none)
    return;
  const int digits = static_cast<int>(fmt::format("{}", counts_.total).size());
  std::string line = fmt::format("[{:>{}}/{}] point {} {} in {:.1f}s", counts_.done, digits, counts_.total,
                                 id, ok ? "ok" : "FAILED", wall_s);
  if (!label.empty())
    line.append("  ").append(label);
  if (!ok)
    line.append(": ").append(detail);
  if (style_ == ProgressStyle::lines) {
    if (const auto left = estimate_time_left_s(counts_, elapsed_s()); left && counts_.done < counts_.total)
      line += fmt::format("  (~{} left)", format_time_left(*left));
    out_ << line << '\n' << std::flush;
    return;
  }
  // On a terminal only failures get a line of their own; the bar shows the rest.
  if (!ok) {
    clear_bar();
    out_ << line << '\n';
  }
  dirty_ = true;
}

void Progress::tick() {
  if (style_ != ProgressStyle::bar)
    return;
  // Soon after a change; otherwise often enough for the clock to move.
  const auto since = std::chrono::steady_clock::now() - last_draw_;
  if (!bar_shown_ || (dirty_ && since >= std::chrono::milliseconds(50)) ||
      since >= std::chrono::milliseconds(500))
    draw();
}

void Progress::draw() {
  if (style_ != ProgressStyle::bar)
    return;
  last_draw_ = std::chrono::steady_clock::now();
  dirty_ = false;
  out_ << "\r\033[K" << progress_bar_line(counts_, elapsed_s(), terminal_width() - 1) << std::flush;
  bar_shown_ = true;
}

void Progress::clear_bar() {
  if (bar_shown_)
    out_ << "\r\033[K";
  bar_shown_ = false;
}

void Progress::close() {
  clear_bar();
  out_ << std::flush;
}

struct ProgressLine::Ticker {
  std::thread thread;
  std::condition_variable wake;
  bool stop = false;
};

ProgressLine::ProgressLine(std::ostream& out, bool enabled, bool in_place)
    : out_(out), enabled_(enabled), in_place_(in_place), start_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() {
  close();
}

double ProgressLine::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressLine::update(std::string text) {
  const std::lock_guard lock(mutex_);
  text_ = std::move(text);
  draw_locked(false);
}

void ProgressLine::print_above(const std::string& line) {
  const std::lock_guard lock(mutex_);
  clear_locked();
  out_ << line << '\n' << std::flush;
  draw_locked(true);
}

void ProgressLine::draw_locked(bool force) {
  if (!enabled_ || text_.empty())
    return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < 1.0)
    return;  // quick work stays silent
  const auto since = now - last_draw_;
  const auto interval = in_place_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  if (!force && shown_ && since < interval)
    return;
  if (!in_place_ && force && shown_ && since < interval)
    return;  // a line per interval, even when a note came in between
  last_draw_ = now;
  std::string line = fmt::format("{} [{}]", text_, format_time_left(elapsed));
  if (in_place_) {
    const auto width = static_cast<std::size_t>(std::max(20, terminal_width() - 1));
    if (line.size() > width)
      line.resize(width);
    out_ << "\r\033[K" << line << std::flush;
  } else {
    out_ << line << '\n' << std::flush;
  }
  shown_ = true;
}

void ProgressLine::clear_locked() {
  if (in_place_ && shown_)
    out_ << "\r\033[K" << std::flush;
  if (in_place_)
    shown_ = false;
}

void ProgressLine::start_ticker() {
  if (!enabled_ || ticker_)
    return;
  ticker_ = std::make_unique<Ticker>();
  ticker_->thread = std::thread([this] {
    // Signals go to the main thread, whose handler stops the process.
    platforms::block_interruption_signals_in_this_thread();
    std::unique_lock lock(mutex_);
    while (!ticker_->stop) {
      ticker_->wake.wait_for(lock, std::chrono::milliseconds(100));
      if (!ticker_->stop)
        draw_locked(false);
    }
  });
}

void ProgressLine::stop_ticker() {
  if (!ticker_)
    return;
  {
    const std::lock_guard lock(mutex_);
    ticker_->stop = true;
  }
  ticker_->wake.notify_all();
  ticker_->thread.join();
  ticker_.reset();
}

void ProgressLine::close() {
  stop_ticker();
  const std::lock_guard lock(mutex_);
  clear_locked();
  text_.clear();
}

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) != 0;
}

bool progress_wanted(bool forced) {
  return forced || stderr_is_terminal();
}

std::string format_count_short(double count) {
  if (count < 1e4)
    return fmt::format("{:.0f}", count);
  return units::format_si(count, "");
}

int terminal_width() {
  winsize ws{};
  if (::isatty(STDERR_FILENO) && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 80;
}

ProgressStyle default_progress_style() {
  return ::isatty(STDERR_FILENO) ? ProgressStyle::bar : ProgressStyle::lines;
}

}  // namespace trainsim::sim
