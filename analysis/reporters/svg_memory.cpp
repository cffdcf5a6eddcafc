// Memory over the iteration: one step line per pipeline stage (the stage's
// first GPU), with its peak marked, under a dashed line at the GPUs' memory
// capacity: the y axis always reaches it, so a plan's headroom, or how far
// a plan that does not fit overflows (run --allow-oom), reads at a glance.
#include <fmt/ostream.h>

#include <algorithm>
#include <ostream>

#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/svg_style.hpp"
#include "platforms/number_format.hpp"

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
  constexpr double left = 90, right = 260, top = 76, plot_h = 320, bottom = 46, plot_w = 800;
  // The smallest capacity among the GPUs shown (mixed clusters differ).
  double capacity = 0;
  for (int g : shown) {
    const double c = mem.gpus[static_cast<std::size_t>(g)].capacity_bytes;
    capacity = capacity == 0 ? c : std::min(capacity, c);
  }
  // Round ticks in GiB (or MiB for small runs), up to the capacity and the peak.
  const double top_bytes = std::max({mem.peak_bytes, capacity, 1.0});
  const double unit = top_bytes >= 1024.0 * 1024 * 1024 ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
  auto yticks = svg::ticks(top_bytes / unit, 6);
  for (auto& tick : yticks)
    tick *= unit;
  const double y_max = std::max(yticks.back(), 1.0);
  auto x = [&](double s) { return left + plot_w * s / t; };
  auto y = [&](double b) { return top + plot_h * (1 - b / y_max); };

  out << svg::open_document(left + plot_w + right, top + plot_h + bottom,
                            fmt::format("{}: memory per GPU over the iteration", run.scenario_name));
  // The model's description is long: two lines, cut at a "; " or ", ".
  std::string first = mem.model, second;
  if (first.size() > 120) {
    const auto cut = first.rfind(", ", 120);
    if (cut != std::string::npos) {
      second = first.substr(cut + 2);
      first.resize(cut + 1);
    }
  }
  fmt::print(out, "<text class=\"subtitle\" x=\"12\" y=\"40\" fill=\"#444\">{}</text>\n", svg::escape(first));
  fmt::print(
      out, "<text class=\"subtitle\" x=\"12\" y=\"56\" fill=\"#444\">{}{}Peak {} of {} ({}).</text>\n",
      svg::escape(second), second.empty() ? "" : ". ", svg::escape(units::format_bytes(mem.peak_bytes)),
      svg::escape(units::format_bytes(capacity)),
      mem.peak_bytes > capacity && capacity > 0
          ? svg::escape(fmt::format("does not fit: {} over", units::format_bytes(mem.peak_bytes - capacity)))
          : svg::escape(fmt::format(
                "{} free", units::format_percent(capacity > 0 ? 1 - mem.peak_bytes / capacity : 0))));
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
  if (capacity > 0)
    fmt::print(out,
               "<g class=\"capacity\"><line x1=\"{0:.1f}\" y1=\"{1:.2f}\" x2=\"{2:.1f}\" y2=\"{1:.2f}\" "
               "stroke=\"#c0392b\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/><text x=\"{2:.1f}\" "
               "y=\"{3:.2f}\" text-anchor=\"end\" fill=\"#c0392b\">GPU memory {4}</text></g>\n",
               left, y(capacity), left + plot_w, y(capacity) - 5, svg::escape(units::format_bytes(capacity)));
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto& m = mem.gpus[static_cast<std::size_t>(shown[i])];
    const char* colour = kPalette[i % kPalette.size()];
    std::string points;
    double prev = m.samples().empty() ? 0 : m.samples().front().bytes;
    for (const auto& sample : m.samples()) {
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
        svg::escape(units::format_bytes(m.peak_bytes)));
  }
  out << "</svg>\n";
}

}  // namespace trainsim::analysis
