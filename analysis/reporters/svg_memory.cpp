// Memory over the iteration: one step line per pipeline stage (the stage's
// first GPU), with its peak marked.
#include <fmt/ostream.h>

#include <algorithm>
#include <ostream>

#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/svg_style.hpp"

namespace trainsim::analysis {

void write_memory_svg(std::ostream& out, const RunContext& run, const Report& report) {
  static constexpr std::array<const char*, 8> kPalette{"#4c78a8", "#f58518", "#e45756", "#72b7b2",
                                                       "#54a24b", "#eeca3b", "#b279a2", "#9d755d"};
  const auto& mem = report.memory;
  const double t = std::max(report.summary.iteration_time_s, 1e-12);
  // The first GPU of every stage.
  std::vector<int> shown;
  for (int s = 0; s < run.plan.pp; ++s)
    for (const auto& m : mem.gpus)
      if (run.plan.pp_rank_of(m.gpu) == s) {
        shown.push_back(m.gpu);
        break;
      }
  constexpr double left = 90, right = 260, top = 60, plot_h = 320, bottom = 46, plot_w = 800;
  // Round ticks in GiB (or MiB for small runs).
  const double unit = mem.peak_bytes >= 1024.0 * 1024 * 1024 ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
  auto yticks = svg::ticks(std::max(mem.peak_bytes, 1.0) / unit, 6);
  for (auto& tick : yticks)
    tick *= unit;
  const double y_max = std::max(yticks.back(), 1.0);
  auto x = [&](double s) { return left + plot_w * s / t; };
  auto y = [&](double b) { return top + plot_h * (1 - b / y_max); };

  out << svg::open_document(left + plot_w + right, top + plot_h + bottom,
                            fmt::format("{}: memory per GPU over the iteration", run.scenario_name));
  const double capacity = mem.gpus.empty() ? 0 : mem.gpus.front().capacity_bytes;
  fmt::print(out, "<text x=\"12\" y=\"40\" fill=\"#444\">{}; HBM {}</text>\n", svg::escape(mem.model),
             svg::escape(svg::bytes_label(capacity)));
  for (double b : yticks)
    fmt::print(out,
               "<line x1=\"{0:.1f}\" y1=\"{1:.2f}\" x2=\"{2:.1f}\" y2=\"{1:.2f}\" stroke=\"#ddd\"/><text "
               "x=\"{3:.1f}\" "
               "y=\"{4:.2f}\" text-anchor=\"end\">{5}</text>\n",
               left, y(b), left + plot_w, left - 6, y(b) + 4, svg::escape(svg::bytes_label(b)));
  for (double tick : svg::ticks(t, 8))
    if (tick <= t * (1 + 1e-9))
      fmt::print(out, "<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x(tick),
                 top + plot_h + 18, svg::escape(svg::time_label(tick, t)));
  fmt::print(out, "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>\n",
             left, top + plot_h, left + plot_w);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto& m = mem.gpus[static_cast<std::size_t>(shown[i])];
    const char* colour = kPalette[i % kPalette.size()];
    std::string points;
    double prev = m.samples.empty() ? 0 : m.samples.front().bytes;
    for (const auto& sample : m.samples) {
      points += fmt::format("{:.2f},{:.2f} {:.2f},{:.2f} ", x(sample.time_s), y(prev), x(sample.time_s),
                            y(sample.bytes));
      prev = sample.bytes;
    }
    points += fmt::format("{:.2f},{:.2f}", x(t), y(prev));
    fmt::print(
        out,
        "<g class=\"memory-line\" data-gpu=\"{}\"><polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" "
        "points=\"{}\"/><circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"3\" fill=\"{}\"/></g>\n",
        m.gpu, colour, points, x(m.peak_time_s), y(m.peak_bytes), colour);
    fmt::print(
        out,
        "<rect x=\"{0:.1f}\" y=\"{1:.1f}\" width=\"12\" height=\"3\" fill=\"{2}\"/><text x=\"{3:.1f}\" "
        "y=\"{4:.1f}\">stage {5} (GPU {6}): peak {7}</text>\n",
        left + plot_w + 12, top + 10 + 18.0 * static_cast<double>(i), colour, left + plot_w + 28,
        top + 14 + 18.0 * static_cast<double>(i), run.plan.pp_rank_of(m.gpu), m.gpu,
        svg::escape(svg::bytes_label(m.peak_bytes)));
  }
  out << "</svg>\n";
}

}  // namespace trainsim::analysis
