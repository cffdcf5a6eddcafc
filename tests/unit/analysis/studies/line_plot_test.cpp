#include "analysis/studies/line_plot.hpp"

#include <gtest/gtest.h>

#include "support/xml_check.hpp"

namespace trainsim::analysis {
namespace {

using testing::count_of;
using testing::xml_problem;

LinePlot three_lines() {
  LinePlot plot;
  plot.title = "per-GPU throughput <by plan> & more";
  plot.x_label = "cluster.gpus";
  plot.y_label = "tokens_per_s_per_gpu";
  plot.legend_title = "plan.tp";
  plot.x_scale = AxisScale::log;
  plot.series = {{"1", {{8, 3000}, {16, 2900}, {32, 2500}, {64, 2000}}},
                 {"2", {{8, 2800}, {16, 2750}, {32, 2600}}},
                 {"4 \"quoted\"", {{64, 2300}}}};
  return plot;
}

TEST(LinePlot, SvgIsWellFormedWithOneLinePerSeriesAndOneMarkerPerPoint) {
  const auto svg = render_line_plot_svg(three_lines());
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(count_of(svg, "<g class=\"series\""), 3u);
  // A single point draws a marker but no line.
  EXPECT_EQ(count_of(svg, "<polyline class=\"line\""), 2u);
  EXPECT_EQ(count_of(svg, "<circle class=\"marker\""), 8u);
  EXPECT_NE(svg.find("&lt;by plan&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("4 &quot;quoted&quot;"), std::string::npos);
  EXPECT_NE(svg.find("cluster.gpus (log scale)"), std::string::npos);
  EXPECT_NE(svg.find("class=\"legend\""), std::string::npos);
}

TEST(LinePlot, LogAxisOfPowersOfTwoTicksAtEachPower) {
  const auto svg = render_line_plot_svg(three_lines());
  for (const char* label : {">8<", ">16<", ">32<", ">64<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  EXPECT_EQ(log_ticks(8, 2048, true), (std::vector<double>{8, 16, 32, 64, 128, 256, 512, 1024, 2048}));
  EXPECT_EQ(log_ticks(3, 30, false), (std::vector<double>{2, 5, 10, 20, 50}));
  EXPECT_EQ(log_ticks(1, 1e6, false), (std::vector<double>{1, 10, 100, 1e3, 1e4, 1e5, 1e6}));
  // A long range keeps about a dozen labels.
  EXPECT_LE(log_ticks(1, 1 << 30, true).size(), 13u);
}

TEST(LinePlot, LinearTicksAreNiceAndCoverTheRange) {
  const auto unit = linear_ticks(0, 1);
  const std::vector<double> expected{0, 0.2, 0.4, 0.6, 0.8, 1.0};
  ASSERT_EQ(unit.size(), expected.size());
  for (std::size_t i = 0; i < unit.size(); ++i)
    EXPECT_NEAR(unit[i], expected[i], 1e-12);
  const auto t = linear_ticks(0, 3100);
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 3100);
  const double step = t[1] - t[0];
  EXPECT_TRUE(step == 500 || step == 1000) << step;
  const auto negative = linear_ticks(-0.3, 0.7);
  EXPECT_LE(negative.front(), -0.3);
  EXPECT_GE(negative.back(), 0.7);
  EXPECT_NE(std::find(negative.begin(), negative.end(), 0.0), negative.end());
}

TEST(LinePlot, TickLabelsAreShort) {
  EXPECT_EQ(tick_label(0), "0");
  EXPECT_EQ(tick_label(0.45), "0.45");
  EXPECT_EQ(tick_label(2048), "2048");
  EXPECT_EQ(tick_label(15000), "15k");
  EXPECT_EQ(tick_label(2.5e6), "2.5M");
  EXPECT_EQ(tick_label(1e-5), "1e-05");
}

TEST(LinePlot, CategoricalAxisLabelsEachCategory) {
  LinePlot plot;
  plot.title = "bubble by schedule";
  plot.x_label = "plan.schedule";
  plot.y_label = "bubble_fraction";
  plot.x_categories = {"gpipe", "1f1b"};
  plot.series = {{"pp=2", {{0, 0.3}, {1, 0.2}}}, {"pp=4", {{0, 0.5}, {1, 0.4}}}};
  const auto svg = render_line_plot_svg(plot);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find(">gpipe<"), std::string::npos);
  EXPECT_NE(svg.find(">1f1b<"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<polyline class=\"line\""), 2u);
  EXPECT_EQ(count_of(svg, "<circle class=\"marker\""), 4u);
}

TEST(LinePlot, NonPositiveValuesOnALogAxisAreRefused) {
  auto plot = three_lines();
  plot.series[0].points[0].x = 0;
  EXPECT_THROW(render_line_plot_svg(plot), PlotError);
  plot = three_lines();
  plot.y_scale = AxisScale::log;
  plot.series[1].points[0].y = -1;
  EXPECT_THROW(render_line_plot_svg(plot), PlotError);
}

TEST(LinePlot, AnEmptyPlotStillDrawsAxes) {
  LinePlot plot;
  plot.title = "nothing";
  const auto svg = render_line_plot_svg(plot);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(count_of(svg, "<circle class=\"marker\""), 0u);
}

TEST(LinePlot, MarkersSitInsideThePlotArea) {
  const auto svg = render_line_plot_svg(three_lines());
  // Every marker's cx within [86, 606] and cy within [48, 388] (plot frame).
  for (auto pos = svg.find("<circle class=\"marker\" cx=\""); pos != std::string::npos;
       pos = svg.find("<circle class=\"marker\" cx=\"", pos + 1)) {
    const double cx = std::stod(svg.substr(pos + 27));
    const auto cy_pos = svg.find("cy=\"", pos) + 4;
    const double cy = std::stod(svg.substr(cy_pos));
    EXPECT_GE(cx, 86);
    EXPECT_LE(cx, 606);
    EXPECT_GE(cy, 48);
    EXPECT_LE(cy, 388);
  }
}

}  // namespace
}  // namespace trainsim::analysis
