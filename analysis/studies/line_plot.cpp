#include "analysis/studies/line_plot.hpp"
#include "analysis/reporters/svg_style.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainsim::analysis {
namespace {

// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000", "#F0E442"};
constexpr int kColourCount = sizeof(kColours) / sizeof(kColours[0]);
// Past eight lines the colours repeat with a dash pattern.
constexpr const char* kDashes[] = {"", "6 3", "2 3", "8 3 2 3"};

constexpr double kHeight = 460;
constexpr double kLeft = 86;
constexpr double kTop = 48;
constexpr double kPlotWidth = 520;
constexpr double kPlotHeight = 340;
constexpr double kFontSize = 12;

bool is_power_of_two(double v) {
  if (v < 1 || v != std::floor(v) || v > 1e15)
    return false;
  const auto n = static_cast<unsigned long long>(v);
  return (n & (n - 1)) == 0;
}

// Maps data values on one axis to pixels.
struct Axis {
  double lo = 0;
  double hi = 1;
  bool log = false;
  double pixel_from = 0;  // pixel of lo
  double pixel_to = 1;    // pixel of hi
  std::vector<double> ticks;
  std::vector<std::string> tick_labels;

  double t(double v) const { return log ? std::log10(v) : v; }
  double pixel(double v) const {
    const double span = t(hi) - t(lo);
    const double f = span > 0 ? (t(v) - t(lo)) / span : 0.5;
    return pixel_from + f * (pixel_to - pixel_from);
  }
};

void check_values(const LinePlot& plot) {
  for (const auto& s : plot.series)
    for (const auto& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y))
        throw PlotError(fmt::format("series '{}' has a value that is not a finite number", s.label));
      if (plot.x_categories.empty() && plot.x_scale == AxisScale::log && p.x <= 0)
        throw PlotError(
            fmt::format("series '{}' has x = {} but a log-scale x axis needs positive values", s.label, p.x));
      if (plot.y_scale == AxisScale::log && p.y <= 0)
        throw PlotError(
            fmt::format("series '{}' has y = {} but a log-scale y axis needs positive values", s.label, p.y));
    }
}

Axis value_axis(std::vector<double> values, AxisScale scale, bool from_zero) {
  Axis axis;
  axis.log = scale == AxisScale::log;
  if (values.empty())
    values = axis.log ? std::vector<double>{1, 10} : std::vector<double>{0, 1};
  auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
  double lo = *min_it;
  double hi = *max_it;
  if (axis.log) {
    const bool twos = std::all_of(values.begin(), values.end(), is_power_of_two);
    if (lo == hi) {
      lo /= twos ? 2 : 10;
      hi *= twos ? 2 : 10;
    }
    axis.ticks = log_ticks(lo, hi, twos);
    axis.lo = std::min(lo, axis.ticks.front());
    axis.hi = std::max(hi, axis.ticks.back());
  } else {
    if (from_zero && lo > 0)
      lo = 0;
    if (lo == hi) {
      const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
    axis.ticks = linear_ticks(lo, hi);
    axis.lo = axis.ticks.front();
    axis.hi = axis.ticks.back();
  }
  for (double t : axis.ticks)
    axis.tick_labels.push_back(tick_label(t));
  return axis;
}

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target_count) {
  if (!(hi > lo))
    return {lo};
  const double raw = (hi - lo) / std::max(1, target_count - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * 10;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  const double first = std::floor(lo / step + 1e-9) * step;
  const double last = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    double t = first + i * step;
    if (std::abs(t) < step * 1e-9)
      t = 0;  // no "-0" or 1e-17 at the origin
    ticks.push_back(t);
    if (t >= last - step * 1e-9)
      break;
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, bool powers_of_two) {
  std::vector<double> ticks;
  if (powers_of_two) {
    const int first = static_cast<int>(std::floor(std::log2(lo) + 1e-9));
    const int last = static_cast<int>(std::ceil(std::log2(hi) - 1e-9));
    const int stride = std::max(1, (last - first + 11) / 12);  // at most about 12 labels
    for (int e = first; e <= last; e += stride)
      ticks.push_back(std::ldexp(1.0, e));
    if (ticks.back() < hi)
      ticks.push_back(std::ldexp(1.0, ticks.empty() ? last : std::ilogb(ticks.back()) + stride));
    return ticks;
  }
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const bool fine = std::log10(hi / lo) < 2;
  std::vector<double> all;
  for (int e = first; e <= last; ++e) {
    const double decade = std::pow(10.0, e);
    all.push_back(decade);
    if (fine && e < last) {
      all.push_back(2 * decade);
      all.push_back(5 * decade);
    }
  }
  // From the last tick at or below lo to the first at or above hi.
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool below_next = i + 1 < all.size() && all[i + 1] <= lo * (1 + 1e-9);
    if (below_next)
      continue;
    ticks.push_back(all[i]);
    if (all[i] >= hi * (1 - 1e-9))
      break;
  }
  return ticks;
}

std::string tick_label(double v) {
  if (v == 0)
    return "0";
  const double a = std::abs(v);
  if (a >= 1e4) {
    constexpr const char* kSuffixes[] = {"k", "M", "G", "T", "P", "E"};
    int i = 0;
    double scaled = v / 1e3;
    while (std::abs(scaled) >= 1e3 && i < 5) {
      scaled /= 1e3;
      ++i;
    }
    return fmt::format("{:.3g}{}", scaled, kSuffixes[i]);
  }
  if (a < 1e-3)
    return fmt::format("{:.2g}", v);
  return fmt::format("{:.4g}", v);
}

std::string render_line_plot_svg(const LinePlot& plot) {
  check_values(plot);
  const bool categorical = !plot.x_categories.empty();

  std::vector<double> xs, ys;
  std::size_t longest_label = plot.legend_title.size();
  for (const auto& s : plot.series) {
    longest_label = std::max(longest_label, s.label.size());
    for (const auto& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  }
  const double legend_width = plot.series.empty() ? 0 : std::max(120.0, 7.0 * longest_label + 48);
  const double width = kLeft + kPlotWidth + 24 + legend_width;

  Axis x;
  if (categorical) {
    x.lo = -0.5;
    x.hi = plot.x_categories.size() - 0.5;
    for (std::size_t i = 0; i < plot.x_categories.size(); ++i) {
      x.ticks.push_back(static_cast<double>(i));
      x.tick_labels.push_back(plot.x_categories[i]);
    }
  } else {
    x = value_axis(xs, plot.x_scale, false);
    // Room so that markers at the ends do not sit on the frame.
    const double pad = 0.03 * (x.t(x.hi) - x.t(x.lo));
    if (x.log) {
      x.lo = std::pow(10.0, x.t(x.lo) - pad);
      x.hi = std::pow(10.0, x.t(x.hi) + pad);
    } else {
      x.lo -= pad;
      x.hi += pad;
    }
  }
  x.pixel_from = kLeft;
  x.pixel_to = kLeft + kPlotWidth;
  Axis y = value_axis(ys, plot.y_scale, true);
  y.pixel_from = kTop + kPlotHeight;
  y.pixel_to = kTop;

  std::string svg;
  svg += fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"{2:.0f}\">\n",
      width, kHeight, kFontSize);
  svg += fmt::format("<title>{}</title>\n", svg::escape(plot.title));
  svg += fmt::format("<rect width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", width, kHeight);
  svg += fmt::format(
      "<text class=\"title\" x=\"{:.1f}\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" "
      "font-weight=\"bold\">{}</text>\n",
      kLeft + kPlotWidth / 2, svg::escape(plot.title));

  // Grid and ticks.
  svg += "<g class=\"axes\" stroke=\"#000000\" stroke-width=\"1\">\n";
  for (std::size_t i = 0; i < y.ticks.size(); ++i) {
    const double py = y.pixel(y.ticks[i]);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e0e0e0\"/>\n",
        kLeft, py, kLeft + kPlotWidth, py);
    svg += fmt::format("<line class=\"tick\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n",
                       kLeft - 5, py, kLeft, py);
    svg += fmt::format(
        "<text class=\"tick-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" "
        "stroke=\"none\">{}</text>\n",
        kLeft - 8, py + 4, svg::escape(y.tick_labels[i]));
  }
  for (std::size_t i = 0; i < x.ticks.size(); ++i) {
    const double px = x.pixel(x.ticks[i]);
    if (px < kLeft - 0.5 || px > kLeft + kPlotWidth + 0.5)
      continue;
    svg += fmt::format("<line class=\"tick\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", px,
                       kTop + kPlotHeight, px, kTop + kPlotHeight + 5);
    svg += fmt::format(
        "<text class=\"tick-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
        "stroke=\"none\">{}</text>\n",
        px, kTop + kPlotHeight + 19, svg::escape(x.tick_labels[i]));
  }
  svg += fmt::format(
      "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"none\"/>\n",
      kLeft, kTop, kPlotWidth, kPlotHeight);
  svg += "</g>\n";
  svg += fmt::format("<text class=\"x-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}{}</text>\n",
                     kLeft + kPlotWidth / 2, kTop + kPlotHeight + 44, svg::escape(plot.x_label),
                     !categorical && x.log ? " (log scale)" : "");
  svg += fmt::format(
      "<text class=\"y-label\" x=\"18\" y=\"{0:.1f}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 18 {0:.1f})\">{1}{2}</text>\n",
      kTop + kPlotHeight / 2, svg::escape(plot.y_label), y.log ? " (log scale)" : "");

  if (xs.empty())
    svg += fmt::format(
        "<text class=\"no-data\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
        "fill=\"#808080\">no data</text>\n",
        kLeft + kPlotWidth / 2, kTop + kPlotHeight / 2);

  // Lines and markers.
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const auto& s = plot.series[i];
    const char* colour = kColours[i % kColourCount];
    const char* dash = kDashes[(i / kColourCount) % 4];
    svg += fmt::format("<g class=\"series\" data-label=\"{}\">\n", svg::escape(s.label));
    if (s.points.size() >= 2) {
      std::string points;
      for (const auto& p : s.points)
        points += fmt::format("{}{:.2f},{:.2f}", points.empty() ? "" : " ", x.pixel(p.x), y.pixel(p.y));
      svg += fmt::format(
          "<polyline class=\"line\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"2\"{}/>\n",
          points, colour, *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "");
    }
    for (const auto& p : s.points) {
      const std::string x_text = categorical && p.x >= 0 && p.x < plot.x_categories.size()
                                     ? plot.x_categories[static_cast<std::size_t>(p.x)]
                                     : fmt::format("{:.6g}", p.x);
      svg += fmt::format(
          "<circle class=\"marker\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"3.5\" fill=\"{}\"><title>{}: {} = {}, {} "
          "= "
          "{:.6g}</title></circle>\n",
          x.pixel(p.x), y.pixel(p.y), colour, svg::escape(s.label), svg::escape(plot.x_label),
          svg::escape(x_text), svg::escape(plot.y_label), p.y);
    }
    svg += "</g>\n";
  }

  // Legend.
  if (!plot.series.empty()) {
    const double lx = kLeft + kPlotWidth + 24;
    double ly = kTop + 8;
    svg += "<g class=\"legend\">\n";
    if (!plot.legend_title.empty()) {
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">{}</text>\n", lx, ly,
                         svg::escape(plot.legend_title));
      ly += 20;
    }
    for (std::size_t i = 0; i < plot.series.size(); ++i) {
      const char* colour = kColours[i % kColourCount];
      const char* dash = kDashes[(i / kColourCount) % 4];
      svg += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"{}/>"
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
          lx, ly - 4, lx + 28, ly - 4, colour, *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "",
          lx + 14, ly - 4, colour, lx + 36, ly, svg::escape(plot.series[i].label));
      ly += 18;
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace trainsim::analysis
