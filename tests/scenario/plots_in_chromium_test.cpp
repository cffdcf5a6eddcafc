// Every plot and page, opened in headless Chromium at 1400x1000 and measured
// as a reader sees it (tests/trace_consumer/check_outputs.mjs): what was
// checked by eye on the screenshots in docs/screenshots/ stays checked here.
// TRAINSIM_SCREENSHOTS=DIR saves the screenshots again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

nlohmann::json open_in_chromium(const fs::path& page, const std::vector<fs::path>& svgs) {
  const auto dir = fresh_dir("chromium-io");
  std::string cmd = "cd ";
  cmd.append(shell_quote(TRAINSIM_SOURCE_DIR))
      .append(" && node tests/trace_consumer/check_outputs.mjs page ");
  cmd.append(shell_quote(page.string()));
  for (const auto& svg : svgs)
    cmd.append(" ").append(shell_quote(svg.string()));
  cmd.append(" >").append(shell_quote((dir / "out").string()));
  cmd.append(" 2>").append(shell_quote((dir / "err").string()));
  const int raw = std::system(cmd.c_str());
  const auto out = read_file(dir / "out"), err = read_file(dir / "err");
  fs::remove_all(dir);
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << err;
  if (!(WIFEXITED(raw) && WEXITSTATUS(raw) == 0))
    return nlohmann::json::object();
  return nlohmann::json::parse(out);
}

const nlohmann::json& svg_named(const nlohmann::json& j, const std::string& file) {
  for (const auto& svg : j["svgs"])
    if (svg["file"] == file)
      return svg;
  static const nlohmann::json none = nlohmann::json::object();
  ADD_FAILURE() << "no " << file << " in " << j.dump();
  return none;
}

// 64 GPUs (8 nodes, dp 8 x tp 2 x pp 4): the Gantt folds identical timelines,
// stays small, keeps an axis on screen and lists only the kinds that occur;
// the memory plot of a plan that does not fit shows the capacity it overflows.
TEST(PlotsInChromium, TheRunPlotsAndPageReadAtAGlanceAt64Gpus) {
  const auto dir = fresh_dir("glance");
  const auto r =
      run_cli({"run", "scenarios/quickstart.yaml", "--quiet", "--html", "--allow-oom", "--out", dir.string(),
               "--set", "cluster.nodes=8", "--set", "plan.dp=auto", "--set", "plan.micro_batch_size=8"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j =
      open_in_chromium(dir / "report.html", {dir / "gantt.svg", dir / "bubbles.svg", dir / "memory.svg"});
  ASSERT_TRUE(j.contains("svgs")) << j.dump();
  EXPECT_EQ(j["errors"].size(), 0u) << j["errors"].dump();

  const auto& gantt = svg_named(j, "gantt.svg");
  EXPECT_EQ(gantt["gpus_in_rows"], 64) << gantt.dump();
  // Each row stands for the GPUs whose timelines are identical to the
  // nanosecond: here the 2 TP ranks of 2 DP replicas (replicas on other
  // rails finish their sends tens of microseconds apart).
  EXPECT_LE(gantt["gpu_rows"].get<int>(), 16) << "identical replicas fold into one row";
  EXPECT_LT(gantt["bytes"].get<int>(), 1 << 20);
  ASSERT_EQ(gantt["time_axes"].size(), 2u);
  EXPECT_LT(gantt["time_axes"][0]["bottom"].get<double>(), 1000) << "an axis on screen";
  EXPECT_LE(gantt["height"].get<double>(), 1000) << gantt.dump();
  for (const auto& entry : gantt["legend_entries"])
    EXPECT_TRUE(entry != "backward (input)" && entry != "CP comm" && entry != "EP all-to-all") << entry;
  EXPECT_EQ(gantt["texts_outside"].size(), 0u) << gantt["texts_outside"].dump();

  const auto& memory = svg_named(j, "memory.svg");
  EXPECT_EQ(memory["memory_lines"], 4);
  ASSERT_EQ(memory["capacity"].size(), 1u) << memory.dump();
  EXPECT_GT(memory["capacity"][0]["top"].get<double>(), 0);
  EXPECT_EQ(memory["texts_outside"].size(), 0u) << memory["texts_outside"].dump();
  EXPECT_EQ(svg_named(j, "bubbles.svg")["stage_bars"], 4);
  EXPECT_EQ(svg_named(j, "bubbles.svg")["texts_outside"].size(), 0u);

  // report.html: text reads left, numbers right, no terminal dump.
  const auto& page = j["html"];
  for (const auto& h : page["headings"])
    EXPECT_EQ(h.get<std::string>().find("Terminal"), std::string::npos) << h;
  EXPECT_EQ(page["pre_blocks"], 0);
  for (const auto& align : page["paragraph_align"])
    EXPECT_TRUE(align == "start" || align == "left") << align;
  for (const auto& table : page["tables"]) {
    if (table["class"] == "causes") {
      EXPECT_TRUE(table["first_cell_align"] == "left" || table["first_cell_align"] == "start")
          << table.dump();
    }
  }
  EXPECT_LE(page["scroll_width"].get<int>(), 1400);
  fs::remove_all(dir);
}

// A sweep's page: the varied columns and the figures of interest first, the
// reason of a dropped point on screen; its plots say what they show, in
// units, fractions in percent.
TEST(PlotsInChromium, TheStudyPageAndPlotsShowWhatVariesFirstInHumanUnits) {
  const auto dir = fresh_dir("study-page");
  const auto r = run_cli({"sweep", "scenarios/study-tp-pp.yaml", "--quiet", "--html", "-j", "2", "--out",
                          dir.string(), "--only", "plan.tp=1,8", "--only", "plan.pp=1,4,8"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<fs::path> plots;
  for (const auto& entry : fs::directory_iterator(dir / "plots"))
    plots.push_back(entry.path());
  std::sort(plots.begin(), plots.end());
  const auto j = open_in_chromium(dir / "report.html", plots);
  ASSERT_TRUE(j.contains("html")) << j.dump();
  EXPECT_EQ(j["errors"].size(), 0u) << j["errors"].dump();
  const auto& tables = j["html"]["tables"];
  ASSERT_GE(tables.size(), 1u);
  const auto& main = tables[0];
  const auto columns = main["columns"].get<std::vector<std::string>>();
  ASSERT_GE(columns.size(), 5u);
  EXPECT_EQ(columns[0], "point");
  EXPECT_EQ(columns[2], "tensor parallel (tp)");
  EXPECT_EQ(columns[3], "pipeline parallel (pp)");
  EXPECT_EQ(columns[4], "iteration time");
  EXPECT_EQ(columns.back(), "reason");  // tp 8 x pp 4 and 8 need more than 16 GPUs: dropped
  EXPECT_LE(main["right_px"].get<double>(), 1400) << "every column of the first table on screen";
  for (const auto& svg : j["svgs"]) {
    const auto y = svg["y_label"].get<std::string>();
    EXPECT_EQ(y.find('_'), std::string::npos) << y;
    EXPECT_EQ(svg["x_label"].get<std::string>().find('_'), std::string::npos) << svg.dump();
    EXPECT_EQ(svg["texts_outside"].size(), 0u) << svg.dump();
  }
  EXPECT_EQ(svg_named(j, "bubble_fraction-vs-plan.pp-by-plan.tp.svg")["y_label"], "bubble (%)");
  EXPECT_EQ(svg_named(j, "tokens_per_s-vs-plan.tp-by-plan.pp.svg")["y_label"], "throughput (tokens/s)");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
