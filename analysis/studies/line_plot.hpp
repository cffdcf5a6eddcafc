#pragma once
// Line plots as standalone SVG, written by trainsim itself so that a study's
// figures need no plotting runtime: axes with ticks and labels, one line per
// series with a marker per point (hover shows the values), a legend, and
// optionally a logarithmic x or y axis or a categorical x axis.
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::analysis {

struct PlotPoint {
  double x = 0;  // for a categorical x axis: the category's index
  double y = 0;
};

struct PlotSeries {
  std::string label;
  std::vector<PlotPoint> points;  // drawn in this order
};

enum class AxisScale { linear, log };

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string legend_title;  // what distinguishes the lines, e.g. "plan.tp"
  AxisScale x_scale = AxisScale::linear;
  AxisScale y_scale = AxisScale::linear;
  // Non-empty: the x axis shows these names at 0, 1, 2, ... (x_scale ignored).
  std::vector<std::string> x_categories;
  std::vector<PlotSeries> series;
};

// Thrown for a plot that cannot be drawn (a value <= 0 on a log axis, a
// value that is not finite).
class PlotError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A complete SVG document: one <polyline class="line"> per series with at
// least two points, one <circle class="marker"> per point.
std::string render_line_plot_svg(const LinePlot& plot);

// Tick positions, exposed for tests. Linear: "nice" steps of 1, 2 or 5 x 10^k
// covering [lo, hi]. Log: powers of two when every value is one (GPU and
// node counts), else powers of ten (with 2 and 5 between when the range
// spans less than two decades).
std::vector<double> linear_ticks(double lo, double hi, int target_count = 6);
std::vector<double> log_ticks(double lo, double hi, bool powers_of_two);
// "0.45", "12", "1.5k", "2.3M", "1e-05": short tick labels.
std::string tick_label(double value);

}  // namespace trainsim::analysis
