#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/report.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/studies/result_column_names.hpp"
#include "platforms/number_format.hpp"
#include "support/hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++n;
  return n;
}

struct Reported {
  testing::TwoStagePipeline h;
  RunContext run{"hand-made", "hand.yaml", h.cluster, h.model, h.plan, h.graph, nullptr};
  Report report;
  Reported() {
    h.timeline.gpu_energy_J = {1000, 2000};
    report = build_report(run, h.timeline);
  }
  template <typename F>
  std::string text(F write) {
    std::ostringstream out;
    write(out);
    return out.str();
  }
};

TEST(Reporters, GanttHasOneRowBarPerGpuAndOutlinesTheCriticalPath) {
  Reported r;
  const auto svg = r.text([&](std::ostream& o) { write_gantt_svg(o, r.run, r.h.timeline, r.report); });
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<g class=\"gpu-row\""), 2u);
  EXPECT_EQ(count(svg, "class=\"bar\""), 2u);
  EXPECT_EQ(count(svg, "stroke=\"#111\""), 5u);  // the critical path's compute ops
  EXPECT_EQ(count(svg, "<svg"), count(svg, "</svg>"));
}

TEST(Reporters, BubbleBarsStackEachStagesCauses) {
  Reported r;
  const auto svg = r.text([&](std::ostream& o) { write_bubbles_svg(o, r.run, r.report); });
  EXPECT_EQ(count(svg, "<g class=\"stage-bar\""), 2u);
  EXPECT_NE(svg.find("data-cause=\"p2p_wait\""), std::string::npos);
  // 5.5 of 8.5 s lost on each stage.
  EXPECT_NE(svg.find(">64.7%</text>"), std::string::npos) << svg;
}

// A study's plots are checked against summary.json's top-level keys when it
// loads (result_column_names): every key a run writes is in that list.
TEST(Reporters, EveryTopLevelKeyOfSummaryJsonIsAColumnAStudyPlotMayName) {
  Reported r;
  const auto j =
      nlohmann::json::parse(r.text([&](std::ostream& o) { write_summary_json(o, r.run, r.report); }));
  for (const auto& [key, value] : j.items()) {
    EXPECT_FALSE(unknown_column_problem(key, {}).has_value()) << key;
    if (value.is_object()) {
      for (const auto& [inner, unused] : value.items())
        EXPECT_FALSE(unknown_column_problem(key + "." + inner, {}).has_value()) << key << "." << inner;
    }
  }
  for (const auto& [cause, unused] : j["lost_time"]["by_cause"].items())
    EXPECT_FALSE(
        unknown_column_problem("lost_time.by_cause." + cause + ".fraction_of_gpu_time", {}).has_value());
  EXPECT_TRUE(unknown_column_problem("lost_tme.gpu_seconds", {}).has_value());
}

TEST(Reporters, SummaryJsonHasEverySectionAndCausesAddUp) {
  Reported r;
  const auto j =
      nlohmann::json::parse(r.text([&](std::ostream& o) { write_summary_json(o, r.run, r.report); }));
  EXPECT_EQ(j["schema"], "trainsim.summary/3");
  for (const char* key : {"iteration_time_s", "mfu", "hfu", "bubble_fraction", "lost_time", "critical_path",
                          "utilization", "memory", "energy", "stages", "gpus"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const auto& g : j["gpus"]) {
    double sum = 0, idle = 0;
    for (const auto& [k, v] : g["lost_by_cause_s"].items())
      sum += v.get<double>();
    for (const auto& [k, v] : g["idle_by_cause_s"].items())
      idle += v.get<double>();
    EXPECT_DOUBLE_EQ(sum, g["lost_s"].get<double>());
    EXPECT_DOUBLE_EQ(idle, g["idle_s"].get<double>());
  }
  EXPECT_DOUBLE_EQ(j["energy"]["energy_J"].get<double>(), 3000);
  EXPECT_DOUBLE_EQ(j["energy"]["tokens_per_J"].get<double>(), j["tokens_per_iteration"].get<double>() / 3000);
  EXPECT_DOUBLE_EQ(
      j["energy"]["tokens_per_J"].get<double>() * j["energy"]["energy_per_token_J"].get<double>(), 1);
  EXPECT_EQ(j["critical_path"]["by_kind"][0]["seconds"].get<double>(), 3);
}

TEST(Reporters, SummaryGroupsGpusWithIdenticalFiguresAndListsEachGpuOnlyUpToTheLimit) {
  Reported r;
  // GPUs 2 and 3: copies of GPU 0 on another node, so they share its group.
  for (int rank : {2, 3}) {
    auto u = r.report.summary.gpus[0];
    u.gpu = rank;
    u.node = 7;
    r.report.summary.gpus.push_back(u);
    r.report.bubbles.gpus.push_back(r.report.bubbles.gpus[0]);
    r.report.utilization.gpus.push_back(r.report.utilization.gpus[0]);
    r.report.memory.gpus.push_back(r.report.memory.gpus[0]);
    r.report.energy.gpus.push_back(r.report.energy.gpus[0]);
  }
  const auto listed =
      nlohmann::json::parse(r.text([&](std::ostream& o) { write_summary_json(o, r.run, r.report); }));
  ASSERT_EQ(listed["gpus"].size(), 4u);
  const auto& groups = listed["gpu_groups"];
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0]["gpu_count"], 3);
  EXPECT_EQ(groups[0]["gpu_ranges"], nlohmann::json::parse("[[0, 0], [2, 3]]"));
  EXPECT_EQ(groups[1]["gpu_count"], 1);
  EXPECT_EQ(groups[1]["gpu_ranges"], nlohmann::json::parse("[[1, 1]]"));
  // A group holds exactly the figures of each GPU in it, without rank and node.
  for (const auto& [group, rank] : {std::pair{0, 0}, {0, 3}, {1, 1}}) {
    auto expected = listed["gpus"][static_cast<std::size_t>(rank)];
    expected.erase("gpu");
    expected.erase("node");
    auto got = groups[static_cast<std::size_t>(group)];
    got.erase("gpu_count");
    got.erase("gpu_ranges");
    EXPECT_EQ(got, expected) << "GPU " << rank;
  }
  // Above the limit the list goes; the groups stay as they were.
  const auto grouped =
      nlohmann::json::parse(r.text([&](std::ostream& o) { write_summary_json(o, r.run, r.report, 3); }));
  EXPECT_FALSE(grouped.contains("gpus"));
  EXPECT_EQ(grouped["gpu_groups"], groups);
}

// The groups are found from each GPU's figures' bytes before any text is
// written (analysis/reporters/summary_json.cpp): a GPU that differs from
// another only in a nested figure, or in its GPU type, is in a group of its
// own, and copies with equal figures share one.
TEST(Reporters, SummaryGroupsSplitOnANestedFigureOrTheGpuType) {
  Reported r;
  for (int rank : {2, 3, 4, 5}) {
    auto u = r.report.summary.gpus[0];
    u.gpu = rank;
    r.report.summary.gpus.push_back(u);
    r.report.bubbles.gpus.push_back(r.report.bubbles.gpus[0]);
    r.report.utilization.gpus.push_back(r.report.utilization.gpus[0]);
    r.report.memory.gpus.push_back(r.report.memory.gpus[0]);
    r.report.energy.gpus.push_back(r.report.energy.gpus[0]);
  }
  // GPU 3: one kind of its memory at peak; GPU 4: one kind of its exposed
  // communication; GPU 5: its type. GPU 2 stays a copy of GPU 0.
  r.report.summary.gpus[3].memory_at_peak.bytes[0] += 1;
  r.report.utilization.gpus[4].exposed_by_kind_s[0] += 0.5;
  r.report.summary.gpus[5].gpu_type += "x";
  const auto j =
      nlohmann::json::parse(r.text([&](std::ostream& o) { write_summary_json(o, r.run, r.report); }));
  const auto& groups = j["gpu_groups"];
  ASSERT_EQ(groups.size(), 5u) << groups.dump(1);
  EXPECT_EQ(groups[0]["gpu_ranges"], nlohmann::json::parse("[[0, 0], [2, 2]]"));
  for (std::size_t k = 2; k < 5; ++k)
    EXPECT_EQ(groups[k]["gpu_count"], 1) << k;
  EXPECT_EQ(groups[2]["memory_at_peak"], j["gpus"][3]["memory_at_peak"]);
  EXPECT_EQ(groups[3]["exposed_comm_by_kind_s"], j["gpus"][4]["exposed_comm_by_kind_s"]);
  EXPECT_EQ(groups[4]["type"], j["gpus"][5]["type"]);
  EXPECT_NE(groups[4]["type"], groups[0]["type"]);
}

TEST(Reporters, CsvTablesHaveAHeaderAndOneRowPerEntity) {
  Reported r;
  const auto per_gpu = r.text([&](std::ostream& o) { write_per_gpu_csv(o, r.run, r.report); });
  const auto per_stage = r.text([&](std::ostream& o) { write_per_stage_csv(o, r.run, r.report); });
  const auto links = r.text([&](std::ostream& o) { write_links_csv(o, r.report); });
  const auto path =
      r.text([&](std::ostream& o) { write_critical_path_csv(o, r.run, r.h.timeline, r.report); });
  EXPECT_EQ(count(per_gpu, "\n"), 3u);
  EXPECT_EQ(per_gpu.rfind("gpu,node,stage,type,compute_s", 0), 0u);
  EXPECT_NE(per_gpu.find("straggler_s"), std::string::npos);
  EXPECT_EQ(count(per_stage, "\n"), 3u);
  EXPECT_EQ(count(links, "\n"), 5u);
  EXPECT_NE(links.find("0,gpu0-nic_UP,1000000000,1000000000,1,1,"), std::string::npos) << links;
  EXPECT_EQ(count(path, "\n"), 8u);
  EXPECT_NE(path.find("pp p2p"), std::string::npos);
}

TEST(Reporters, ChromeTraceMarksTheCriticalPathAndHasCountersAndMetadata) {
  Reported r;
  const auto j = nlohmann::json::parse(
      r.text([&](std::ostream& o) { write_chrome_trace(o, r.run, r.h.timeline, r.report); }));
  EXPECT_EQ(j["otherData"]["scenario"], "hand-made");
  int critical_segments = 0, memory_counters = 0, link_counters = 0, critical_tasks = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X" && e["cat"] == "critical_path")
      ++critical_segments;
    if (ph == "X" && e["args"].value("critical", false))
      ++critical_tasks;
    if (ph == "C" && e["cat"] == "memory")
      ++memory_counters;
    if (ph == "C" && e["cat"] == "link")
      ++link_counters;
  }
  EXPECT_EQ(critical_segments, 7);
  EXPECT_EQ(critical_tasks, 7 + 2);  // and both receives
  EXPECT_GT(memory_counters, 0);
  EXPECT_GT(link_counters, 0);
}

TEST(Reporters, ChromeTraceSizeEstimateIsWithinAFactorOfTwoOfTheFullTrace) {
  Reported r;
  const auto text = r.text([&](std::ostream& o) { write_chrome_trace(o, r.run, r.h.timeline, r.report); });
  const double estimate = estimated_full_trace_bytes(r.run, r.h.timeline, r.report);
  EXPECT_GT(estimate, 0.5 * static_cast<double>(text.size()));
  EXPECT_LT(estimate, 2.0 * static_cast<double>(text.size()));
  // No data-parallel replicas: every GPU, whatever the size.
  EXPECT_EQ(resolved_trace_detail(TraceDetail::automatic, r.run, r.h.timeline, r.report), TraceDetail::full);
  EXPECT_EQ(resolved_trace_detail(TraceDetail::replica, r.run, r.h.timeline, r.report), TraceDetail::replica);
}

TEST(Reporters, TerminalSummaryEndsWithTheTopCausesOfLostTime) {
  Reported r;
  const auto text = r.text([&](std::ostream& o) { write_terminal_summary(o, r.run, r.report); });
  const auto top = text.find("top causes of lost time");
  ASSERT_NE(top, std::string::npos);
  EXPECT_NE(text.find("1. pipeline warm-up / cool-down", top), std::string::npos) << text;
  EXPECT_NE(text.find("iteration time"), std::string::npos);
}

TEST(Reporters, HtmlPageIsSelfContained) {
  Reported r;
  const auto html =
      r.text([&](std::ostream& o) { write_html_report(o, r.run, r.h.timeline, r.report, "trace.json"); });
  EXPECT_EQ(count(html, "<svg"), 3u);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_NE(html.find("href=\"trace.json\""), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);  // nothing to fetch
}

// timeline.csv formats a task's fields once per distinct text, in slots
// shared by hash: with more distinct tasks than slots (4,096), revisited in
// another order, and tasks of equal fields under other ids, every row still
// writes its own task's fields.
TEST(Reporters, TimelineCsvRowsWriteTheirOwnTasksFieldsPastTheFieldsCache) {
  workloads::TaskGraph graph;
  graph.gpu_count = 2;
  const workloads::ParallelPlan plan{
      .dp = 1, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 1};
  const auto cluster = testing::uniform_cluster(1, 2, 1e9, 0);
  workloads::ModelSpec model;
  Timeline timeline;
  constexpr int kTasks = 6000;
  std::vector<workloads::TaskId> ids;
  for (int i = 0; i < kTasks; ++i)
    ids.push_back(
        graph.add({.kind = i % 3 == 0 ? workloads::TaskKind::forward : workloads::TaskKind::backward,
                   .gpu = i % 2,
                   .stage = i % 2,
                   .micro_batch = i % 5000,  // tasks i and i + 5000 write the same fields
                   .duration_s = 1,
                   .bytes = static_cast<double>(i % 7)}));
  graph.seal();
  std::vector<std::size_t> order;
  for (int i = 0; i < kTasks; ++i)
    order.push_back(static_cast<std::size_t>(i));
  for (int i = kTasks - 1; i >= 0; i -= 3)
    order.push_back(static_cast<std::size_t>(i));
  std::string expected = "gpu,stream,kind,name,micro_batch,stage,start_s,end_s,bytes,peer,algorithm\n";
  for (std::size_t at = 0; at < order.size(); ++at) {
    const std::size_t i = order[at];
    const auto& task = graph[ids[i]];
    const double start = 0.25 * static_cast<double>(at), end = start + 0.125;
    timeline.records.push_back({ids[i], task.gpu, Stream::compute, start, end});
    expected += fmt::format("{},compute,{},{},{},{},{},{},{},-1,\n", task.gpu,
                            workloads::to_string(task.kind), workloads::task_label(graph, ids[i]),
                            task.micro_batch, task.stage, units::format_machine(start),
                            units::format_machine(end), units::format_machine(static_cast<double>(i % 7)));
  }
  const RunContext run{"many", "many.yaml", cluster, model, plan, graph, nullptr};
  std::ostringstream out;
  write_timeline_csv(out, run, timeline);
  EXPECT_EQ(out.str(), expected);
}

}  // namespace
}  // namespace trainsim::analysis

namespace trainsim::analysis {
namespace {

// 128 GPUs do not fit: the Gantt shows the first data-parallel replica
// (tp 2 x pp 16 = 32 GPUs) and says so.
// Identical timelines fold: 128 GPUs whose only op is the same forward
// per stage read as one row per stage, each standing for its 8 GPUs; the
// legend lists the kinds that occur; the time axis is above the rows too.
TEST(Reporters, GanttFoldsIdenticalReplicasIntoOneRowPerStage) {
  workloads::TaskGraph graph;
  graph.gpu_count = 128;
  const workloads::ParallelPlan plan{
      .dp = 4, .tp = 2, .pp = 16, .micro_batch_size = 1, .global_batch_size = 4};
  const auto cluster = testing::uniform_cluster(16, 8, 1e9, 0);
  workloads::ModelSpec model;
  Timeline timeline;
  for (int g = 0; g < 128; ++g) {
    const auto f = graph.add({.kind = workloads::TaskKind::forward,
                              .gpu = g,
                              .stage = plan.pp_rank_of(g),
                              .micro_batch = 0,
                              .duration_s = 1});
    timeline.records.push_back({f, g, Stream::compute, 0, 1});
  }
  timeline.end_s = 1;
  graph.seal();
  const RunContext run{"large", "large.yaml", cluster, model, plan, graph, nullptr};
  const auto report = build_report(run, timeline);
  std::ostringstream out;
  write_gantt_svg(out, run, timeline, report);
  const auto svg = out.str();
  EXPECT_EQ(count(svg, "<g class=\"gpu-row\""), 16u);
  EXPECT_EQ(count(svg, "data-gpus=\"8\""), 16u);
  EXPECT_NE(svg.find("128 GPUs in 16 rows"), std::string::npos);
  EXPECT_NE(svg.find("GPU 0 \u00b7 stage 0 \u00b7 \u00d78"), std::string::npos);
  EXPECT_EQ(svg.find("data-gpu=\"2\""), std::string::npos);  // GPU 2 is dp rank 1 of stage 0
  EXPECT_EQ(count(svg, "<g class=\"time-axis\">"), 2u);
  EXPECT_EQ(count(svg, "<g class=\"legend-entry\">"), 2u);  // forward, idle
  EXPECT_NE(svg.find(">forward</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">backward</text>"), std::string::npos);
}

// Timelines that differ keep their rows, up to 64 of them; thin boxes of one
// colour merge so that a long run stays small.
TEST(Reporters, GanttKeepsDistinctTimelinesAndMergesThinBoxes) {
  workloads::TaskGraph graph;
  graph.gpu_count = 80;
  const workloads::ParallelPlan plan{
      .dp = 80, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 80};
  const auto cluster = testing::uniform_cluster(10, 8, 1e9, 0);
  workloads::ModelSpec model;
  Timeline timeline;
  for (int g = 0; g < 80; ++g) {
    // 1,000 back-to-back micro-forwards of 1 us, each GPU starting a little later.
    for (int k = 0; k < 1000; ++k) {
      const double start = 1e-3 * g + 1e-6 * k;
      const auto f = graph.add(
          {.kind = workloads::TaskKind::forward, .gpu = g, .stage = 0, .micro_batch = k, .duration_s = 1e-6});
      timeline.records.push_back({f, g, Stream::compute, start, start + 1e-6});
    }
  }
  timeline.end_s = 1.0;
  graph.seal();
  const RunContext run{"distinct", "distinct.yaml", cluster, model, plan, graph, nullptr};
  const auto report = build_report(run, timeline);
  std::ostringstream out;
  write_gantt_svg(out, run, timeline, report);
  const auto svg = out.str();
  EXPECT_EQ(count(svg, "<g class=\"gpu-row\""), 64u);
  EXPECT_NE(svg.find("64 of 80 rows shown"), std::string::npos);
  // 1,000 ops of a thousandth of a pixel each are one box per row.
  EXPECT_NE(svg.find("1000 ops from F mb0"), std::string::npos);
  EXPECT_LT(svg.size(), 100000u);
}

}  // namespace
}  // namespace trainsim::analysis
