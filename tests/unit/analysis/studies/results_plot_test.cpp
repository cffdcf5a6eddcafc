#include "analysis/studies/results_plot.hpp"

#include <gtest/gtest.h>

#include "support/xml_check.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

// tp in {1, 2} x nodes in {1, 2, 4} x model in {small, big}; throughput per
// GPU = 1000 / tp / nodes (+1 for the big model).
ResultsDocument grid() {
  ResultsDocument doc;
  doc.study["parameters"] = ordered_json::array({"model.preset", "plan.tp", "cluster.nodes"});
  int n = 0;
  for (const std::string model : {"small", "big"})
    for (int tp : {1, 2})
      for (int nodes : {1, 2, 4}) {
        ResultRow row;
        row.point = std::to_string(n++);
        row.status = kStatusOk;
        row.parameters["model.preset"] = model;
        row.parameters["plan.tp"] = tp;
        row.parameters["cluster.nodes"] = nodes;
        row.figures["cluster.gpus"] = nodes * 8;
        row.figures["tokens_per_s_per_gpu"] = 1000.0 / tp / nodes + (model == "big");
        row.figures["plan.schedule"] = tp == 1 ? "gpipe" : "1f1b";
        doc.rows.push_back(row);
      }
  return doc;
}

PlotSpec throughput_by_tp() {
  PlotSpec spec;
  spec.x = "cluster.gpus";
  spec.y = "tokens_per_s_per_gpu";
  spec.lines = {"plan.tp"};
  spec.where = {{"model.preset", "small"}};
  spec.log_x = true;
  return spec;
}

TEST(ResultsPlot, OneLinePerValueOfLinesWithPointsSortedByX) {
  auto doc = grid();
  std::reverse(doc.rows.begin(), doc.rows.end());  // x order must not depend on row order
  const auto plot = build_results_plot(throughput_by_tp(), doc);
  ASSERT_EQ(plot.series.size(), 2u);
  EXPECT_EQ(plot.series[0].label, "2");
  EXPECT_EQ(plot.series[1].label, "1");
  for (const auto& s : plot.series) {
    ASSERT_EQ(s.points.size(), 3u);
    EXPECT_EQ(s.points[0].x, 8);
    EXPECT_EQ(s.points[2].x, 32);
  }
  EXPECT_DOUBLE_EQ(plot.series[1].points[0].y, 1000.0);  // small model, tp 1, 1 node
  EXPECT_EQ(plot.x_scale, AxisScale::log);
  EXPECT_EQ(plot.legend_title, "tensor parallel (tp)");
  EXPECT_EQ(plot.x_label, "GPUs");
  EXPECT_EQ(plot.y_label, "tokens/s per GPU");
  const auto svg = render_line_plot_svg(plot);
  EXPECT_EQ(testing::xml_problem(svg), "");
  EXPECT_EQ(testing::count_of(svg, "<polyline class=\"line\""), 2u);
  EXPECT_EQ(testing::count_of(svg, "<circle class=\"marker\""), 6u);
}

// Axes read as people read them: a fraction in percent, a time in a unit
// that suits it, a label with its unit.
TEST(ResultsPlot, AxesHaveHumanLabelsUnitsAndFractionsInPercent) {
  auto doc = grid();
  for (auto& row : doc.rows) {
    row.figures["mfu"] = 0.4016;
    row.figures["iteration_time_s"] = 0.815;
    row.figures["peak_memory_bytes"] = 14.5 * (1ull << 30);
  }
  auto spec = throughput_by_tp();
  spec.y = "mfu";
  auto plot = build_results_plot(spec, doc);
  EXPECT_EQ(plot.y_label, "MFU (%)");
  EXPECT_DOUBLE_EQ(plot.series[0].points[0].y, 40.16);
  spec.y = "iteration_time_s";
  plot = build_results_plot(spec, doc);
  EXPECT_EQ(plot.y_label, "iteration time (ms)");
  EXPECT_DOUBLE_EQ(plot.series[0].points[0].y, 815);
  spec.y = "peak_memory_bytes";
  plot = build_results_plot(spec, doc);
  EXPECT_EQ(plot.y_label, "peak memory (GiB)");
  EXPECT_DOUBLE_EQ(plot.series[0].points[0].y, 14.5);
  const auto svg = render_line_plot_svg(plot);
  EXPECT_NE(svg.find(">peak memory (GiB)</text>"), std::string::npos);
}

TEST(ResultsPlot, SeveralLineKeysNameEachLineByShortKeys) {
  auto spec = throughput_by_tp();
  spec.where.clear();
  spec.lines = {"model.preset", "plan.tp"};
  const auto plot = build_results_plot(spec, grid());
  ASSERT_EQ(plot.series.size(), 4u);
  EXPECT_EQ(plot.series[0].label, "preset=small, tp=1");
  EXPECT_EQ(plot.legend_title, "model, tensor parallel (tp)");
}

TEST(ResultsPlot, TwoPointsOnOneLineAtTheSameXNameTheParameterThatDiffers) {
  auto spec = throughput_by_tp();
  spec.where.clear();
  try {
    build_results_plot(spec, grid());
    FAIL() << "expected a PlotError";
  } catch (const PlotError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("model.preset"), std::string::npos) << message;
    EXPECT_NE(message.find("`lines`"), std::string::npos) << message;
  }
}

TEST(ResultsPlot, UnknownColumnsAreNamedWithTheColumnsThatExist) {
  auto spec = throughput_by_tp();
  spec.y = "tokens_per_joule";
  try {
    build_results_plot(spec, grid());
    FAIL();
  } catch (const PlotError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("y 'tokens_per_joule' is not a column"), std::string::npos) << message;
    EXPECT_NE(message.find("tokens_per_s_per_gpu"), std::string::npos) << message;
  }
}

TEST(ResultsPlot, FailedAndDroppedPointsAreLeftOut) {
  auto doc = grid();
  doc.rows[0].status = kStatusFailed;
  doc.rows[1].status = kStatusDropped;
  doc.rows[0].figures = ordered_json::object();
  const auto plot = build_results_plot(throughput_by_tp(), doc);
  std::size_t points = 0;
  for (const auto& s : plot.series)
    points += s.points.size();
  EXPECT_EQ(points, 4u);
}

TEST(ResultsPlot, TextValuedXGivesACategoricalAxisInFirstAppearanceOrder) {
  PlotSpec spec;
  spec.x = "plan.schedule";
  spec.y = "tokens_per_s_per_gpu";
  spec.lines = {"cluster.nodes"};
  spec.where = {{"model.preset", "small"}};
  const auto plot = build_results_plot(spec, grid());
  EXPECT_EQ(plot.x_categories, (std::vector<std::string>{"gpipe", "1f1b"}));
  EXPECT_EQ(plot.series.size(), 3u);
}

// summary.json names plan.precision for FP8 plans only; a BF16 point, which
// has no such figure, plots and matches `where` as "bf16" (a study of
// precisions by variant: the line of BF16 points is labelled, not "null").
TEST(ResultsPlot, AnAbsentPrecisionReadsAsBf16) {
  ResultsDocument doc;
  doc.study["parameters"] = ordered_json::array({"variant"});
  int n = 0;
  for (const std::string gpu : {"H100-SXM", "B200"})
    for (const bool fp8 : {false, true}) {
      ResultRow row;
      row.point = std::to_string(n++);
      row.status = kStatusOk;
      row.parameters["variant"] = gpu + (fp8 ? "-fp8" : "-bf16");
      row.figures["cluster.name"] = gpu;
      row.figures["tokens_per_s_per_gpu"] = 100.0 * n;
      if (fp8)
        row.figures["plan.precision"] = "fp8";
      doc.rows.push_back(row);
    }
  PlotSpec spec;
  spec.x = "cluster.name";
  spec.y = "tokens_per_s_per_gpu";
  spec.lines = {"plan.precision"};
  const auto plot = build_results_plot(spec, doc);
  ASSERT_EQ(plot.series.size(), 2u);
  EXPECT_EQ(plot.series[0].label, "bf16");
  EXPECT_EQ(plot.series[1].label, "fp8");
  EXPECT_EQ(plot.x_categories, (std::vector<std::string>{"H100-SXM", "B200"}));
  ASSERT_EQ(plot.series[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(plot.series[0].points[1].y, 300.0);  // B200, BF16
  spec.where = {{"plan.precision", "bf16"}};
  spec.lines = {};
  const auto bf16_only = build_results_plot(spec, doc);
  ASSERT_EQ(bf16_only.series.size(), 1u);
  EXPECT_EQ(bf16_only.series[0].points.size(), 2u);
}

// A study of BF16 points alone (or `trainsim sweep --only` of them) has no
// plan.precision column at all: its plots by precision still draw, as one
// line of bf16, instead of refusing a column no row names.
TEST(ResultsPlot, AStudyOfBf16PointsAlonePlotsByPrecision) {
  ResultsDocument doc;
  doc.study["parameters"] = ordered_json::array({"variant"});
  for (const std::string gpu : {"H100-SXM", "B200"}) {
    ResultRow row;
    row.point = gpu;
    row.status = kStatusOk;
    row.parameters["variant"] = gpu + "-bf16";
    row.figures["cluster.name"] = gpu;
    row.figures["tokens_per_s_per_gpu"] = gpu == "B200" ? 200.0 : 100.0;
    doc.rows.push_back(row);
  }
  PlotSpec spec;
  spec.x = "cluster.name";
  spec.y = "tokens_per_s_per_gpu";
  spec.lines = {"plan.precision"};
  spec.where = {{"plan.precision", "bf16"}};
  const auto plot = build_results_plot(spec, doc);
  ASSERT_EQ(plot.series.size(), 1u);
  EXPECT_EQ(plot.series[0].label, "bf16");
  ASSERT_EQ(plot.series[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(plot.series[0].points[1].y, 200.0);
  spec.lines = {"plan.tp"};  // a column without a stand-in is still refused
  EXPECT_THROW(build_results_plot(spec, doc), PlotError);
}

TEST(ResultsPlot, SpecRoundTripsThroughJsonWithDefaults) {
  const auto spec = throughput_by_tp();
  EXPECT_EQ(spec.file_or_default(), "tokens_per_s_per_gpu-vs-cluster.gpus-by-plan.tp.svg");
  EXPECT_EQ(spec.title_or_default(), "tokens/s per GPU vs GPUs, by tensor parallel (tp)");
  const auto back = PlotSpec::from_json(spec.to_json());
  EXPECT_EQ(back.x, spec.x);
  EXPECT_EQ(back.lines, spec.lines);
  ASSERT_EQ(back.where.size(), 1u);
  EXPECT_EQ(back.where[0].second, "small");
  EXPECT_TRUE(back.log_x);
  EXPECT_FALSE(back.log_y);
}

}  // namespace
}  // namespace trainsim::analysis
