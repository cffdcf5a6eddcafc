#include "analysis/studies/comparison_table.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "analysis/studies/figure_names.hpp"
#include "analysis/studies/results_table.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

ordered_json figures(const std::string& schedule, double iteration_time_s, double bubble) {
  ordered_json s;
  s["schema"] = "trainsim.summary/1";
  s["scenario"] = "q";
  s["cluster"] = {{"gpus", 16}};
  s["plan"] = {{"pp", 4}, {"schedule", schedule}};
  s["iteration_time_s"] = iteration_time_s;
  s["tokens_per_s"] = 131072 / iteration_time_s;
  s["mfu"] = 0.5 * 2.0 / iteration_time_s;
  s["bubble_fraction"] = bubble;
  s["exposed_comm_fraction"] = 0.05;
  s["task_count"] = 1000;
  return flatten_summary(s);
}

std::string table(const std::vector<ComparedRun>& runs) {
  std::ostringstream out;
  write_comparison_table(out, runs);
  return out.str();
}

std::string line_of(const std::string& text, const std::string& label) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("  " + label, 0) == 0)
      return line;
  return "";
}

TEST(ComparisonTable, HeadlineFiguresSideBySideWithRatiosToTheFirst) {
  const auto text =
      table({{"1f1b", figures("1f1b", 2.0, 0.1), ""}, {"gpipe", figures("gpipe", 2.5, 0.3), ""}});
  EXPECT_NE(text.find("ratios to the first (1f1b)"), std::string::npos) << text;
  const auto time = line_of(text, "iteration time");
  EXPECT_NE(time.find("2s "), std::string::npos) << time;
  EXPECT_NE(time.find("2.5s (1.25x)"), std::string::npos) << time;
  const auto mfu = line_of(text, "MFU");
  EXPECT_NE(mfu.find("50.0%"), std::string::npos) << mfu;
  EXPECT_NE(mfu.find("40.0% (0.80x)"), std::string::npos) << mfu;
  const auto bubble = line_of(text, "bubble");
  EXPECT_NE(bubble.find("30.0% (3.00x)"), std::string::npos) << bubble;
  EXPECT_NE(line_of(text, "throughput (tokens/s)").find("(0.80x)"), std::string::npos);
  EXPECT_NE(line_of(text, "tokens/s per GPU").find("(0.80x)"), std::string::npos);
  EXPECT_NE(line_of(text, "exposed communication").find("5.0% (1.00x)"), std::string::npos);
}

// A bubble of 1e-18 against none both read 0.0%: no ratio of rounding
// noise (it read 864029868.37x on a real comparison, and 0.00x).
TEST(ComparisonTable, FiguresThatAllReadZeroGetNoRatio) {
  const auto text = table({{"a", figures("1f1b", 2.0, 1e-18), ""},
                           {"b", figures("1f1b", 2.5, 0.0), ""},
                           {"c", figures("1f1b", 2.5, 2e-10), ""}});
  const auto bubble = line_of(text, "bubble");
  EXPECT_EQ(bubble.find('x'), std::string::npos) << bubble;
  EXPECT_NE(bubble.find("0.0%"), std::string::npos) << bubble;
  // A figure that only starts at zero still gets its ratio where it reads more.
  const auto grown = table({{"a", figures("1f1b", 2.0, 1e-18), ""}, {"b", figures("1f1b", 2.5, 0.3), ""}});
  EXPECT_NE(line_of(grown, "bubble").find("30.0% ("), std::string::npos) << grown;
}

TEST(ComparisonTable, FiguresNoSummaryHasReadNotAvailable) {
  const auto text = table({{"a", figures("1f1b", 2.0, 0.1), ""}, {"b", figures("gpipe", 2.5, 0.3), ""}});
  const auto memory = line_of(text, "peak memory");
  const auto energy = line_of(text, "energy per token");
  EXPECT_NE(memory.find("n/a"), std::string::npos) << text;
  EXPECT_NE(energy.find("n/a"), std::string::npos) << text;
}

TEST(ComparisonTable, NewSummaryFiguresAppearWithoutAChange) {
  auto a = figures("1f1b", 2.0, 0.1);
  auto b = figures("gpipe", 2.5, 0.3);
  a["peak_memory_bytes"] = 40.0 * (1ull << 30);
  b["peak_memory_bytes"] = 60.0 * (1ull << 30);
  a["bpipe_transfer_exposed_s"] = 0.25;
  b["bpipe_transfer_exposed_s"] = 0.5;
  const auto text = table({{"a", a, ""}, {"b", b, ""}});
  EXPECT_NE(line_of(text, "peak memory").find("(1.50x)"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "peak memory").find("GiB"), std::string::npos) << text;
  const auto other = line_of(text, "bpipe_transfer_exposed_s");
  EXPECT_NE(other.find("(2.00x)"), std::string::npos) << text;
  // The same everywhere: not repeated.
  EXPECT_EQ(line_of(text, "task_count"), "");
}

TEST(ComparisonTable, InputsThatDifferAreListedAndAFailedRunSaysWhy) {
  const auto text = table(
      {{"a", figures("1f1b", 2.0, 0.1), ""}, {"b", figures("gpipe", 2.5, 0.3), ""}, {"c", nullptr, "boom"}});
  EXPECT_NE(text.find("inputs that differ"), std::string::npos);
  const auto schedule = line_of(text, "plan.schedule");
  EXPECT_NE(schedule.find("1f1b"), std::string::npos);
  EXPECT_NE(schedule.find("gpipe"), std::string::npos);
  EXPECT_EQ(line_of(text, "plan.pp"), "");  // equal in a and b
  EXPECT_NE(line_of(text, "iteration time").find("failed"), std::string::npos);
  EXPECT_NE(text.find("c failed: boom"), std::string::npos);
}

TEST(ComparisonTable, FiguresReadByTheirUnit) {
  EXPECT_EQ(format_figure("bubble_fraction", 0.125), "12.5%");
  EXPECT_EQ(format_figure("mfu", 0.4016), "40.2%");
  EXPECT_EQ(format_figure("tokens_per_s", 160900), "161k tokens/s");
  EXPECT_EQ(format_figure("tokens_per_s_per_gpu", 3456), "3.46k tokens/s per GPU");
  EXPECT_EQ(format_figure("energy.tokens_per_J", 34.54), "34.5 tokens/J");
  EXPECT_EQ(format_figure("task_count", 1000), "1000");
  EXPECT_EQ(format_figure("energy_per_token_J", 0.25), "250mJ");
  EXPECT_EQ(format_figure("tflops_per_gpu", 91.25), "91.25");
  EXPECT_EQ(format_figure("peak_memory_gpu", 12), "12");
  EXPECT_EQ(format_figure("peak_memory_bytes", 1 << 30), "1GiB");
}

// A plot's axes read in words, its unit beside: not the column's dotted name.
TEST(ComparisonTable, AxesOfTheStudiesFiguresReadInWords) {
  EXPECT_EQ(axis_unit("energy.tokens_per_J", 34.5).label, "tokens per joule (tokens/J)");
  EXPECT_EQ(axis_unit("cluster.name", 0).label, "cluster");
  EXPECT_EQ(axis_unit("plan.precision", 0).label, "precision");
  EXPECT_EQ(axis_unit("model.name", 0).label, "model");
  EXPECT_EQ(axis_unit("tokens_per_s_per_gpu", 3456).label, "tokens/s per GPU");
  EXPECT_EQ(axis_unit("lost_time.by_cause.p2p_wait.gpu_seconds", 1).label,
            "lost_time.by_cause.p2p_wait.gpu_seconds");
}

// A GPU number is not a quantity: no ratio. Figures whose ratios all read
// 1.00x are counted, not listed.
TEST(ComparisonTable, IdentifiersGetNoRatioAndNegligibleDifferencesAreCounted) {
  auto a = figures("1f1b", 2.0, 0.1);
  auto b = figures("gpipe", 2.5, 0.3);
  a["peak_memory_gpu"] = 0;
  b["peak_memory_gpu"] = 12;
  a["energy.idle_fraction"] = 0.2;
  b["energy.idle_fraction"] = 0.2001;
  a["links.hottest_busy_s"] = 1.0;
  b["links.hottest_busy_s"] = 1.002;
  const auto text = table({{"a", a, ""}, {"b", b, ""}});
  const auto gpu = line_of(text, "peak_memory_gpu");
  EXPECT_NE(gpu.find("12"), std::string::npos) << text;
  EXPECT_EQ(gpu.find("x)"), std::string::npos) << gpu;
  EXPECT_EQ(line_of(text, "energy.idle_fraction"), "") << text;
  EXPECT_NE(text.find("(2 more figures differ by less than 0.5%"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainsim::analysis
