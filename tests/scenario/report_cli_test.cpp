// `trainsim run` writes every output; `trainsim report` regenerates them from
// the saved run; Chromium's own consumers load the trace, the HTML page and
// the SVG plots.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/reporters/run_archive.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/scenario.hpp"
#include "support/cli.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kOutputs{"summary.json",      "per_gpu.csv",  "per_stage.csv", "links.csv",
                                        "critical_path.csv", "timeline.csv", "trace.json",    "gantt.svg",
                                        "bubbles.svg",       "memory.svg"};

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Runs a command line through the shell from the source directory.
CliResult run_shell(const std::string& command) {
  const auto dir = fresh_dir("shell-io");
  std::string cmd = "cd ";
  cmd.append(shell_quote(TRAINSIM_SOURCE_DIR)).append(" && ").append(command);
  cmd.append(" >").append(shell_quote((dir / "out").string()));
  cmd.append(" 2>").append(shell_quote((dir / "err").string())).append(" </dev/null");
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  fs::remove_all(dir);
  return r;
}

fs::path quickstart_run(const std::string& name, std::vector<std::string> extra = {}) {
  const auto out = fresh_dir(name);
  std::vector<std::string> args{"run", "scenarios/quickstart.yaml", "-q", "--out", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return out;
}

TEST(ReportCli, RunWritesEveryOutputWithConsistentFigures) {
  const auto dir = quickstart_run("outputs");
  for (const auto& f : kOutputs)
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_TRUE(fs::exists(dir / "run.trainsim"));
  const auto s = nlohmann::json::parse(read_file(dir / "summary.json"));
  EXPECT_EQ(s["schema"], "trainsim.summary/3");
  const double t = s["iteration_time_s"];
  // Lost time by cause adds up per GPU, and to the summary's split.
  for (const auto& g : s["gpus"]) {
    double lost = 0, idle = 0;
    for (const auto& [k, v] : g["lost_by_cause_s"].items())
      lost += v.get<double>();
    for (const auto& [k, v] : g["idle_by_cause_s"].items())
      idle += v.get<double>();
    EXPECT_NEAR(lost, g["lost_s"].get<double>(), 1e-12);
    EXPECT_NEAR(idle, g["idle_s"].get<double>(), 1e-12);
    EXPECT_NEAR(
        g["lost_s"].get<double>(),
        g["idle_s"].get<double>() + g["exposed_comm_s"].get<double>() + g["optimizer_s"].get<double>(),
        1e-12);
    double exposed = 0;
    for (const auto& [k, v] : g["exposed_comm_by_kind_s"].items())
      exposed += v.get<double>();
    EXPECT_NEAR(exposed, g["exposed_comm_s"].get<double>(), 1e-12);
    EXPECT_GT(g["energy_J"].get<double>(), 0);
  }
  for (const auto& st : s["stages"]) {
    double lost = 0, idle = 0;
    for (const auto& [k, v] : st["lost_by_cause_s"].items())
      lost += v.get<double>();
    for (const auto& [k, v] : st["idle_by_cause_s"].items())
      idle += v.get<double>();
    EXPECT_NEAR(lost, st["lost_s"].get<double>(), 1e-12);
    EXPECT_NEAR(idle, st["idle_s"].get<double>(), 1e-12);
    EXPECT_NEAR(st["idle_s"].get<double>() / t, st["bubble_fraction"].get<double>(), 1e-12);
  }
  double by_kind = 0;
  for (const auto& b : s["critical_path"]["by_kind"])
    by_kind += b["seconds"].get<double>();
  EXPECT_NEAR(by_kind, t, 1e-12);
  EXPECT_EQ(s["utilization"]["hottest_links"].size(), 10u);
  EXPECT_GT(s["energy"]["energy_per_token_J"].get<double>(), 0);
  EXPECT_GT(s["memory"]["peak_bytes"].get<double>(), 0);

  EXPECT_EQ(lines(read_file(dir / "per_gpu.csv")), 1u + 16);
  EXPECT_EQ(lines(read_file(dir / "per_stage.csv")), 1u + 4);
  EXPECT_EQ(lines(read_file(dir / "links.csv")), 1u + s["utilization"]["links_used"].get<std::size_t>());
  EXPECT_EQ(lines(read_file(dir / "critical_path.csv")),
            1u + s["critical_path"]["segments"].get<std::size_t>());
  const auto gantt = read_file(dir / "gantt.svg");
  // Identical tensor- and data-parallel replicas fold: one row per pipeline
  // stage, each standing for its 4 GPUs.
  std::size_t rows = 0, gpus = 0;
  for (auto pos = gantt.find("<g class=\"gpu-row\""); pos != std::string::npos;
       pos = gantt.find("<g class=\"gpu-row\"", pos + 1)) {
    ++rows;
    const auto at = gantt.find("data-gpus=\"", pos) + 11;
    gpus += std::stoul(gantt.substr(at, gantt.find('"', at) - at));
  }
  EXPECT_EQ(rows, 4u);
  EXPECT_EQ(gpus, 16u);
  fs::remove_all(dir);
}

TEST(ReportCli, ReportRegeneratesByteIdenticalOutputsAndTheHtmlPage) {
  const auto dir = quickstart_run("regenerate");
  const auto again = fresh_dir("regenerated");
  const auto r = run_cli({"report", dir.string(), "--out", again.string(), "--html"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("top causes of lost time"), std::string::npos);
  for (const auto& f : kOutputs)
    EXPECT_EQ(read_file(dir / f), read_file(again / f)) << f;
  EXPECT_TRUE(fs::exists(again / "report.html"));
  // The new folder is a run folder: it has the archive, and a report of it works.
  EXPECT_EQ(read_file(dir / "run.trainsim"), read_file(again / "run.trainsim"));
  const auto third = fresh_dir("regenerated-again");
  const auto again_r = run_cli({"report", again.string(), "--out", third.string(), "--quiet"});
  EXPECT_EQ(again_r.status, 0) << again_r.err;
  EXPECT_EQ(read_file(dir / "trace.json"), read_file(third / "trace.json"));
  fs::remove_all(dir);
  fs::remove_all(again);
  fs::remove_all(third);
}

// A folded run's archive (format version 10: version 7 with its flows and
// records coded as differences, the fingerprint multiply-rotate) holds each class once with the fold's
// images; `report` expands them as the run did: every file is the run's, summary.json's fold included, and
// the archive written again is the same bytes. The same timeline saved whole (version 6, as trainsim saved a
// folded run before version 7) still reports the same files, summary.json without its fold (version 6 has no
// place for it).
TEST(ReportCli, AFoldedRunsArchiveHoldsEachClassOnceAndReportsTheRunsFiles) {
  // scale-131k's plan on rail groups of 2 nodes: 2 classes of 4 replicas,
  // the data-parallel rings spanning them as quotient rings.
  const auto dir = fresh_dir("folded-run");
  std::vector<std::string> args{"run", "scenarios/scale-131k.yaml", "-q", "--out", dir.string(), "--fold"};
  for (const char* set :
       {"cluster.nodes=16", "plan.dp=8", "plan.pp=2", "model.layers=4", "plan.stage_layers=[2,2]",
        "plan.global_batch_size=16", "cluster.fabric.nodes_per_leaf=2", "cluster.collectives.fidelity=auto"})
    args.insert(args.end(), {"--set", set});
  const auto run = run_cli(args);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string archive = read_file(dir / "run.trainsim");
  std::uint32_t version = 0;
  (void)analysis::run_archive_body(archive, &version);
  EXPECT_EQ(version, analysis::kRunArchiveFoldVersion);
  const auto saved = analysis::parse_run_archive(archive);
  ASSERT_TRUE(saved.timeline.records.expanded());
  EXPECT_TRUE(saved.fold.considered && saved.fold.folded);
  EXPECT_EQ(saved.fold.class_size, 4);
  EXPECT_EQ(saved.timeline.flows.size(), 4 * saved.timeline.flows.recorded().size());

  const auto again = fresh_dir("folded-report");
  const auto r = run_cli({"report", dir.string(), "--out", again.string(), "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& f : kOutputs)
    EXPECT_EQ(read_file(dir / f), read_file(again / f)) << f;
  EXPECT_EQ(read_file(dir / "run.trainsim"), read_file(again / "run.trainsim"));
  EXPECT_TRUE(nlohmann::json::parse(read_file(again / "summary.json")).contains("fold"));

  // The same timeline saved whole: every record, flow and choice.
  const auto meta = analysis::run_metadata_from_json(saved.metadata_json);
  const auto scenario = scenario::parse_scenario_text(meta.scenario_yaml, meta.scenario_file, meta.overrides,
                                                      {.check_memory = false});
  const auto graph = sim::build_task_graph(scenario);
  analysis::Timeline whole;
  for (const auto& record : saved.timeline.records)
    whole.records.push_back(record);
  for (const auto& flow : saved.timeline.flows)
    whole.flows.push_back(flow);
  whole.end_s = saved.timeline.end_s;
  whole.collectives = saved.timeline.collectives;
  whole.links = saved.timeline.links;
  whole.flow_links = saved.timeline.flow_links;
  whole.gpu_energy_J = saved.timeline.gpu_energy_J;
  std::ostringstream old_archive;
  analysis::write_run_archive(old_archive, saved.metadata_json, graph, whole);
  (void)analysis::run_archive_body(old_archive.str(), &version);
  EXPECT_EQ(version, analysis::kRunArchiveWholeVersion);
  EXPECT_LT(archive.size(), old_archive.str().size());
  const auto old_dir = fresh_dir("folded-run-whole");
  std::ofstream(old_dir / "run.trainsim", std::ios::binary) << old_archive.str();
  const auto old_report = fresh_dir("folded-report-whole");
  const auto o = run_cli({"report", old_dir.string(), "--out", old_report.string(), "--quiet"});
  ASSERT_EQ(o.status, 0) << o.err;
  for (const auto& f : kOutputs) {
    if (f != "summary.json") {
      EXPECT_EQ(read_file(dir / f), read_file(old_report / f)) << f;
    }
  }
  auto with_fold = nlohmann::json::parse(read_file(dir / "summary.json"));
  with_fold.erase("fold");
  EXPECT_EQ(with_fold.dump(), nlohmann::json::parse(read_file(old_report / "summary.json")).dump());

  // The same body as version 9 wrote it: its fingerprint FNV-1a. `report`
  // checks it with version 9's hash, writes the run's files, and saves the
  // run again as version 10: the run's own bytes.
  std::string body = analysis::run_archive_body(archive);
  std::uint64_t metadata_length = 0;
  std::memcpy(&metadata_length, body.data(), sizeof(metadata_length));
  const std::size_t fingerprint_at = 8 + metadata_length + 4 + 8;
  std::uint64_t stored = 0;
  std::memcpy(&stored, body.data() + fingerprint_at, sizeof(stored));
  EXPECT_EQ(stored, workloads::graph_fingerprint(graph, workloads::FingerprintHash::multiply_rotate));
  const auto v9_dir = fresh_dir("folded-run-v9");
  std::ofstream(v9_dir / "run.trainsim", std::ios::binary)
      << analysis::seal_run_archive(body, analysis::kRunArchiveCodedRecordsFoldVersion);
  const auto refused = run_cli({"report", v9_dir.string(), "--quiet"});
  EXPECT_EQ(refused.status, 1);  // version 9 with version 10's fingerprint: another graph
  EXPECT_NE(refused.err.find("task graph for this scenario differs"), std::string::npos) << refused.err;
  const std::uint64_t fnv1a = workloads::graph_fingerprint(graph, workloads::FingerprintHash::fnv1a);
  EXPECT_NE(fnv1a, stored);
  std::memcpy(body.data() + fingerprint_at, &fnv1a, sizeof(fnv1a));
  std::ofstream(v9_dir / "run.trainsim", std::ios::binary)
      << analysis::seal_run_archive(body, analysis::kRunArchiveCodedRecordsFoldVersion);
  const auto v9_report = fresh_dir("folded-report-v9");
  const auto v9 = run_cli({"report", v9_dir.string(), "--out", v9_report.string(), "--quiet"});
  ASSERT_EQ(v9.status, 0) << v9.err;
  for (const auto& f : kOutputs)
    EXPECT_EQ(read_file(dir / f), read_file(v9_report / f)) << f;
  EXPECT_EQ(read_file(v9_report / "run.trainsim"), archive);
  for (const auto& d : {dir, again, old_dir, old_report, v9_dir, v9_report})
    fs::remove_all(d);
}

// Every run the fold did not consider is saved as before version 7.
TEST(ReportCli, AnUnfoldedRunIsSavedInFormatVersion6) {
  const auto dir = quickstart_run("unfolded-version");
  std::uint32_t version = 0;
  (void)analysis::run_archive_body(read_file(dir / "run.trainsim"), &version);
  EXPECT_EQ(version, analysis::kRunArchiveWholeVersion);
  fs::remove_all(dir);
}

TEST(ReportCli, ReportOfARunWhoseTaskGraphNoLongerMatchesIsBadInput) {
  const auto dir = quickstart_run("stale");
  // The body's layout: metadata length (8) and text, GPU count (4), task
  // count (8), graph fingerprint (8), ... Flip a fingerprint byte and seal
  // the archive again, as a trainsim that builds a different graph would.
  std::string body = analysis::run_archive_body(read_file(dir / "run.trainsim"));
  std::uint64_t metadata_length = 0;
  std::memcpy(&metadata_length, body.data(), sizeof(metadata_length));
  body[8 + metadata_length + 4 + 8] ^= 0x5a;
  const std::string bytes = analysis::seal_run_archive(body, analysis::kRunArchiveWholeVersion);
  std::ofstream(dir / "run.trainsim", std::ios::binary) << bytes;
  const auto r = run_cli({"report", dir.string(), "--quiet"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("task graph for this scenario differs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run the scenario again"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(ReportCli, ReportWithoutASavedRunIsBadInput) {
  const auto empty = fresh_dir("no-run");
  const auto r = run_cli({"report", empty.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no saved run here"), std::string::npos) << r.err;
  std::ofstream(empty / "run.trainsim") << "garbage";
  const auto corrupt = run_cli({"report", empty.string()});
  EXPECT_EQ(corrupt.status, 1);
  EXPECT_NE(corrupt.err.find("run.trainsim"), std::string::npos) << corrupt.err;
  fs::remove_all(empty);
}

// Chrome DevTools' own trace engine (@paulirish/trace_engine, pinned in
// tests/trace_consumer) parses the trace: every GPU stream is a thread with
// its slices, and every pipeline send and collective step is a flow.
TEST(ReportCli, TraceLoadsInChromeDevToolsTraceEngine) {
  const auto dir = quickstart_run("trace-engine");
  const auto r = run_shell("node tests/trace_consumer/check_outputs.mjs trace " +
                           shell_quote((dir / "trace.json").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["processes"], 3);  // 2 nodes and the critical path
  EXPECT_EQ(j["threads"], 2 * 8 * 4 + 1);
  EXPECT_EQ(j["p2p_flows"], 2 * 2 * 3 * 2 * 16);
  EXPECT_GT(j["collective_flows"].get<int>(), 0);
  EXPECT_GT(j["slices"].get<int>(), 1000);
  EXPECT_NE(j["process_names"].dump().find("quickstart"), std::string::npos);
  fs::remove_all(dir);
}

// Headless Chromium opens report.html without a console error and parses
// every SVG as XML: one Gantt row per pipeline stage (its tensor- and
// data-parallel replicas folded), one bar per stage.
TEST(ReportCli, HtmlAndSvgPlotsOpenInHeadlessChromium) {
  const auto dir = quickstart_run("chromium", {"--html"});
  // Built with append() only (GCC 12 -Wrestrict false positive, see cli.hpp).
  std::string cmd = "node tests/trace_consumer/check_outputs.mjs page ";
  cmd.append(shell_quote((dir / "report.html").string()));
  for (const char* svg : {"gantt.svg", "bubbles.svg", "memory.svg"})
    cmd.append(" ").append(shell_quote((dir / svg).string()));
  const auto r = run_shell(cmd);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["errors"].size(), 0u) << j.dump();
  EXPECT_EQ(j["html"]["svgs"], 3);
  EXPECT_EQ(j["html"]["gpu_rows"], 4);
  for (const auto& svg : j["svgs"]) {
    EXPECT_EQ(svg["parse_errors"], 0) << svg.dump();
    EXPECT_EQ(svg["root"], "svg");
  }
  EXPECT_EQ(j["svgs"][0]["gpu_rows"], 4);
  EXPECT_EQ(j["svgs"][1]["stage_bars"], 4);
  EXPECT_EQ(j["svgs"][2]["memory_lines"], 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
