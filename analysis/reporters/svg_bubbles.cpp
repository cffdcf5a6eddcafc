// Lost time per pipeline stage, as one horizontal bar per stage stacked by
// cause (percent of the iteration, mean over the stage's GPUs).
#include <fmt/ostream.h>

#include <algorithm>
#include <ostream>

#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/svg_style.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {

void write_bubbles_svg(std::ostream& out, const RunContext& run, const Report& report) {
  const auto& stages = report.bubbles.stages;
  const double t = report.bubbles.iteration_time_s;
  constexpr double left = 90, right = 90, top = 104, bar_h = 22, gap = 10, bottom = 46, plot_w = 700;
  const double height = top + (bar_h + gap) * static_cast<double>(stages.size()) + bottom;
  double max_fraction = 0;
  for (const auto& st : stages)
    max_fraction = std::max(max_fraction, t > 0 ? st.lost_s / t : 0);
  const auto ticks = svg::ticks(std::max(max_fraction, 0.01) * 100, 5);
  const double axis_max = ticks.back() > 0 ? ticks.back() : 1;  // percent
  auto x = [&](double fraction) { return left + plot_w * (100 * fraction) / axis_max; };

  out << svg::open_document(
      left + plot_w + right, height,
      fmt::format("{}: time each stage is not computing forward/backward", run.scenario_name));
  fmt::print(
      out,
      "<text x=\"12\" y=\"40\" fill=\"#444\">percent of the iteration ({}), mean over each stage's GPUs, "
      "by cause</text>\n",
      svg::escape(units::format_duration(t)));
  const std::vector<BubbleCause> causes = reported_causes(report.bubbles);
  for (std::size_t i = 0; i < causes.size(); ++i) {
    const BubbleCause c = causes[i];
    const double lx = 12 + 400.0 * static_cast<double>(i % 2), ly = 50 + 16.0 * static_cast<double>(i / 2);
    fmt::print(out,
               "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1f}\" "
               "y=\"{:.1f}\" font-size=\"11\">{}</text>\n",
               lx, ly, svg::colour_of(c), lx + 16, ly + 10, svg::escape(describe(c)));
  }
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& st = stages[i];
    const double y = top + (bar_h + gap) * static_cast<double>(i);
    fmt::print(out, "<g class=\"stage-bar\" data-stage=\"{}\">\n", st.stage);
    fmt::print(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">stage {}</text>\n", left - 8,
               y + bar_h - 6, st.stage);
    double acc = 0;
    for (BubbleCause c : causes) {
      const double f = t > 0 ? st.cause_s[static_cast<std::size_t>(c)] / t : 0;
      if (f <= 0)
        continue;
      fmt::print(out,
                 "<rect class=\"cause\" data-cause=\"{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" "
                 "height=\"{:.1f}\" "
                 "fill=\"{}\"><title>stage {}: {} {:.2f}%</title></rect>\n",
                 to_string(c), x(acc), y, x(acc + f) - x(acc), bar_h, svg::colour_of(c), st.stage,
                 svg::escape(describe(c)), 100 * f);
      acc += f;
    }
    fmt::print(out, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n</g>\n", x(acc) + 6, y + bar_h - 6,
               units::format_percent(acc));
  }
  const double axis_y = top + (bar_h + gap) * static_cast<double>(stages.size());
  fmt::print(out, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", left,
             axis_y, left + plot_w, axis_y);
  for (double tick : ticks)
    fmt::print(out,
               "<line x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" stroke=\"#333\"/><text "
               "x=\"{0:.2f}\" "
               "y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}%</text>\n",
               x(tick / 100), axis_y, axis_y + 5, axis_y + 18, tick);
  out << "</svg>\n";
}

}  // namespace trainsim::analysis
