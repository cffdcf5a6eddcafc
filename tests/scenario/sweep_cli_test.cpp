// trainsim sweep / merge / compare through the real binary, on tiny
// scenarios (4 GPUs, a 125M model) so that every simulation takes a moment.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/cli.hpp"
#include "support/xml_check.hpp"

extern char** environ;

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;

const std::string kTiny = R"(name: tiny
cluster:
  gpu: A100
  nodes: 1
  gpus_per_node: 4
  nvlink: {bandwidth: 300GBps, latency: 2us}
model:
  preset: gpt3-125m
plan:
  dp: auto
  tp: 1
  pp: 1
  micro_batch_size: 1
  global_batch_size: 8
)";

// tp 8 cannot split 4 GPUs: two of the six points are dropped.
const std::string kTpPpStudy = kTiny + R"(sweep:
  grid:
    plan.tp: [1, 2, 8]
    plan.pp: [1, 2]
  plots:
    - {y: tokens_per_s_per_gpu, x: plan.tp, lines: plan.pp, title: "Throughput per GPU"}
)";

fs::path write_study(const fs::path& dir, const std::string& text, const std::string& name = "study.yaml") {
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

TEST(SweepCli, RunsEveryPointAndWritesResultsPlotsAndPage) {
  const auto dir = fresh_dir("sweep");
  const auto study = write_study(dir, kTpPpStudy);
  const auto out = dir / "out";
  const auto r = run_cli({"sweep", study.string(), "--out", out.string(), "-j", "2", "--html"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sweep tiny: 4 ok, 0 failed, 2 dropped (6 points)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("6 points (2 dropped: 2 invalid_plan); 4 to simulate with 2 workers"),
            std::string::npos)
      << r.err;
  // Not a terminal: one plain line per point.
  EXPECT_NE(r.err.find("[4/4] point "), std::string::npos) << r.err;

  const auto csv = lines_of(read_file(out / "results.csv"));
  ASSERT_EQ(csv.size(), 7u);
  EXPECT_EQ(csv[0].rfind("point,status,plan.tp,plan.pp,scenario,", 0), 0u) << csv[0];
  EXPECT_EQ(csv[1].rfind("0000,ok,1,1,tiny,", 0), 0u) << csv[1];
  EXPECT_EQ(csv[5].rfind("0004,dropped,8,1,,", 0), 0u) << csv[5];
  EXPECT_NE(csv[5].find("invalid_plan: "), std::string::npos);
  EXPECT_NE(csv[5].find("study.yaml:17:"), std::string::npos) << csv[5];  // the 8 in the tp list

  // Each row holds its own point's summary, figures flattened.
  const auto results = nlohmann::json::parse(read_file(out / "results.json"));
  EXPECT_EQ(results["schema"], "trainsim.results/1");
  EXPECT_EQ(results["study"]["points"], 6);
  EXPECT_FALSE(results.contains("shard"));
  for (const auto& row : results["rows"]) {
    if (row["status"] != "ok")
      continue;
    const auto summary =
        nlohmann::json::parse(read_file(out / "points" / row["point"].get<std::string>() / "summary.json"));
    EXPECT_EQ(summary["plan"]["tp"], row["plan.tp"]);
    EXPECT_EQ(summary["plan"]["pp"], row["plan.pp"]);
    EXPECT_EQ(summary["iteration_time_s"], row["iteration_time_s"]);
    EXPECT_EQ(summary["plan"]["dp"], row["plan.dp"]);  // derived: 4 / (tp pp)
    EXPECT_EQ(row["plan.dp"].get<int>() * row["plan.tp"].get<int>() * row["plan.pp"].get<int>(), 4);
    EXPECT_DOUBLE_EQ(row["tokens_per_s_per_gpu"].get<double>(), summary["tokens_per_s"].get<double>() / 4);
    EXPECT_TRUE(fs::exists(out / "points" / row["point"].get<std::string>() / "trace.json"));
    EXPECT_TRUE(fs::exists(out / "points" / row["point"].get<std::string>() / "scenario.yaml"));
  }
  EXPECT_FALSE(fs::exists(out / "points" / "0004"));  // dropped points never run

  const auto svg = read_file(out / "plots" / "tokens_per_s_per_gpu-vs-plan.tp-by-plan.pp.svg");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count_of(svg, "<polyline class=\"line\""), 2u);  // pp 1 and pp 2
  EXPECT_EQ(count_of(svg, "<circle class=\"marker\""), 4u);  // tp 1 and 2 on each
  EXPECT_NE(svg.find("Throughput per GPU"), std::string::npos);

  const auto html = read_file(out / "report.html");
  EXPECT_EQ(xml_problem(html, true), "");
  EXPECT_EQ(count_of(html, "<svg "), 1u);
  // Six points in the results table, and again in the table of the other
  // figures that vary (folded in a <details>).
  EXPECT_EQ(count_of(html, "<table class=\"results\""), 1u);
  EXPECT_EQ(count_of(html, "<table class=\"results-more\""), 1u);
  EXPECT_EQ(count_of(html, "<tr class=\""), 12u);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // self-contained

  // A point folder is a scenario of its own.
  const auto alone = run_cli(
      {"run", (out / "points" / "0001" / "scenario.yaml").string(), "-q", "--out", (dir / "alone").string()});
  ASSERT_EQ(alone.status, 0) << alone.err;
  EXPECT_EQ(read_file(dir / "alone" / "summary.json"), read_file(out / "points" / "0001" / "summary.json"));
  fs::remove_all(dir);
}

TEST(SweepCli, ARerunReusesFinishedPointsAndRedoesOnlyMissingOnes) {
  const auto dir = fresh_dir("resume");
  const auto study = write_study(dir, kTpPpStudy);
  const auto out = dir / "out";
  const std::vector<std::string> args{"sweep", study.string(), "--out", out.string(), "-j", "2"};
  ASSERT_EQ(run_cli(args).status, 0);
  const auto csv = read_file(out / "results.csv");
  const auto json = read_file(out / "results.json");
  const auto kept = read_file(out / "points" / "0000" / "summary.json");
  std::ofstream(out / "points" / "0000" / "marker") << "untouched";

  const auto again = run_cli(args);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("0 to simulate with 2 workers, 4 finished earlier (reused)"), std::string::npos)
      << again.err;
  EXPECT_EQ(read_file(out / "results.csv"), csv);
  EXPECT_EQ(read_file(out / "results.json"), json);

  // Lose one point, leave another half-written: only those two run again.
  fs::remove_all(out / "points" / "0001");
  fs::rename(out / "points" / "0002", out / "points" / "0002.partial");
  const auto third = run_cli(args);
  ASSERT_EQ(third.status, 0) << third.err;
  EXPECT_NE(third.err.find("2 to simulate with 2 workers, 2 finished earlier (reused)"), std::string::npos)
      << third.err;
  EXPECT_EQ(read_file(out / "points" / "0000" / "marker"), "untouched");
  EXPECT_EQ(read_file(out / "points" / "0000" / "summary.json"), kept);
  EXPECT_FALSE(fs::exists(out / "points" / "0002.partial"));
  EXPECT_EQ(read_file(out / "results.csv"), csv);
  EXPECT_EQ(read_file(out / "results.json"), json);
  fs::remove_all(dir);
}

// Starts trainsim with stderr to a file; returns its pid.
pid_t spawn_trainsim(const std::vector<std::string>& args, const fs::path& err) {
  std::vector<std::string> all{TRAINSIM_EXE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST(SweepCli, AnInterruptedSweepResumesWithoutRedoingFinishedPoints) {
  const auto dir = fresh_dir("interrupt");
  // Six runnable points, one worker: stopped after the first one finished.
  const auto study = write_study(dir, kTiny + R"(sweep:
  grid:
    plan.pp: [1, 2]
    plan.micro_batch_size: [1, 2]
    plan.tp: [1, 2]
)");
  const auto out = dir / "out";
  const std::vector<std::string> args{"sweep", study.string(), "--out", out.string(), "-j", "1"};
  const pid_t pid = spawn_trainsim(args, dir / "err.txt");
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(out / "points" / "0000" / "summary.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(out / "points" / "0000" / "summary.json"));
  ::kill(pid, SIGINT);
  int raw = 0;
  ASSERT_EQ(::waitpid(pid, &raw, 0), pid);
  ASSERT_TRUE(WIFEXITED(raw));
  const auto err = read_file(dir / "err.txt");
  ASSERT_EQ(WEXITSTATUS(raw), 130) << err;
  EXPECT_NE(err.find("trainsim: interrupted (SIGINT); "), std::string::npos) << err;
  EXPECT_NE(err.find("run the same command again to resume"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out / "results.csv"));  // no partial results table

  std::size_t finished = 0;
  for (const auto& entry : fs::directory_iterator(out / "points")) {
    EXPECT_EQ(entry.path().extension(), "") << "debris: " << entry.path();
    finished += fs::exists(entry.path() / "summary.json");
  }
  ASSERT_GE(finished, 1u);
  ASSERT_LT(finished, 8u);

  const auto resumed = run_cli(args);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find(fmt::format("{} to simulate with 1 worker, {} finished earlier (reused)",
                                         8 - finished, finished)),
            std::string::npos)
      << resumed.err;
  EXPECT_EQ(lines_of(read_file(out / "results.csv")).size(), 9u);
  EXPECT_NE(resumed.out.find("8 ok, 0 failed, 0 dropped"), std::string::npos) << resumed.out;
  fs::remove_all(dir);
}

TEST(SweepCli, ShardsMergeIntoExactlyTheUnshardedResults) {
  const auto dir = fresh_dir("shards");
  const auto study = write_study(dir, kTpPpStudy);
  const auto whole = dir / "whole";
  ASSERT_EQ(run_cli({"sweep", study.string(), "--out", whole.string(), "-j", "2"}).status, 0);
  std::vector<std::string> shard_dirs;
  for (int i = 0; i < 2; ++i) {
    const auto shard = dir / fmt::format("shard-{}", i);
    const auto r = run_cli(
        {"sweep", study.string(), "--out", shard.string(), "-j", "1", "--shard", fmt::format("{}/2", i)});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(fmt::format("shard {}/2: 3 points", i)), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(shard / "plots"));  // a shard draws no partial plots
    shard_dirs.push_back(shard.string());
  }
  // Round robin: shard 0 has points 0, 2, 4.
  EXPECT_TRUE(fs::exists(dir / "shard-0" / "points" / "0000"));
  EXPECT_TRUE(fs::exists(dir / "shard-1" / "points" / "0001"));
  EXPECT_FALSE(fs::exists(dir / "shard-0" / "points" / "0001"));

  const auto merged = dir / "merged";
  const auto m = run_cli({"merge", shard_dirs[1], shard_dirs[0], "--out", merged.string(), "--html"});
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find("merged 2 shards of tiny: 6 points, 4 ok, 0 failed, 2 dropped"), std::string::npos)
      << m.out;
  EXPECT_EQ(read_file(merged / "results.csv"), read_file(whole / "results.csv"));
  EXPECT_EQ(read_file(merged / "results.json"), read_file(whole / "results.json"));
  EXPECT_TRUE(fs::exists(merged / "plots" / "tokens_per_s_per_gpu-vs-plan.tp-by-plan.pp.svg"));
  EXPECT_TRUE(fs::exists(merged / "report.html"));

  const auto missing = run_cli({"merge", shard_dirs[0], "--out", (dir / "m2").string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("missing shard 1/2 of study tiny"), std::string::npos) << missing.err;
  const auto twice = run_cli({"merge", shard_dirs[0], shard_dirs[0], "--out", (dir / "m3").string()});
  EXPECT_EQ(twice.status, 1);
  EXPECT_NE(twice.err.find("is given twice"), std::string::npos) << twice.err;
  const auto not_shard = run_cli({"merge", whole.string(), "--out", (dir / "m4").string()});
  EXPECT_EQ(not_shard.status, 1);
  EXPECT_NE(not_shard.err.find("not a shard"), std::string::npos) << not_shard.err;
  fs::remove_all(dir);
}

TEST(SweepCli, BadStudiesAreRefusedBeforeAnythingRuns) {
  const auto dir = fresh_dir("bad-study");
  const auto all_dropped =
      write_study(dir, kTiny + "sweep:\n  grid:\n    plan.tp: [8, 16]\n", "dropped.yaml");
  const auto r = run_cli({"sweep", all_dropped.string(), "--out", (dir / "o").string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("every one of the study's 2 points was dropped"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "o"));

  const auto typo =
      write_study(dir, kTiny + "sweep:\n  grid:\n    plan.tp: [1, 2]\n    plan.ppp: [1]\n", "typo.yaml");
  const auto t = run_cli({"sweep", typo.string(), "--out", (dir / "o").string()});
  EXPECT_EQ(t.status, 1);
  EXPECT_NE(t.err.find("plan.ppp: unknown key"), std::string::npos) << t.err;

  const auto plain = write_study(dir, kTiny, "plain.yaml");
  const auto p = run_cli({"sweep", plain.string()});
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.err.find("neither a `sweep` nor a `variants` section"), std::string::npos) << p.err;

  const auto run = run_cli({"run", all_dropped.string()});
  EXPECT_EQ(run.status, 1);
  EXPECT_NE(run.err.find("run it with `trainsim sweep"), std::string::npos) << run.err;

  const auto shard = run_cli({"sweep", typo.string(), "--shard", "2/2"});
  EXPECT_EQ(shard.status, 1);
  EXPECT_NE(shard.err.find("--shard 2/2: expected I/N with 0 <= I < N"), std::string::npos) << shard.err;
  fs::remove_all(dir);
}

TEST(SweepCli, OnlyRunsTheListedValuesOfSweptColumns) {
  const auto dir = fresh_dir("only");
  const auto study = write_study(dir, kTpPpStudy + R"(variants:
  small: {plan.global_batch_size: 8}
  big: {plan.global_batch_size: 16}
)");
  const auto out = dir / "out";
  const auto r = run_cli({"sweep", study.string(), "--out", out.string(), "-j", "2", "--only", "plan.tp=2,1",
                          "--only", "variant=big", "--keep", "summary"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sweep tiny: 4 ok, 0 failed, 0 dropped (4 points)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("--only plan.tp=2,1 --only variant=big"), std::string::npos) << r.err;
  const auto results = nlohmann::json::parse(read_file(out / "results.json"));
  ASSERT_EQ(results["rows"].size(), 4u);
  std::set<std::pair<int, int>> tp_pp;
  for (const auto& row : results["rows"]) {
    EXPECT_EQ(row["variant"], "big");
    EXPECT_EQ(row["plan.global_batch_size"], 16);
    tp_pp.emplace(row["plan.tp"].get<int>(), row["plan.pp"].get<int>());
  }
  // The study file's order is kept (tp 1 before tp 2), whatever the option's.
  EXPECT_EQ(tp_pp, (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}}));
  EXPECT_EQ(results["rows"][0]["plan.tp"], 1);

  const auto column =
      run_cli({"sweep", study.string(), "--out", (dir / "o").string(), "--only", "plan.dp=1"});
  EXPECT_EQ(column.status, 1);
  EXPECT_NE(column.err.find("--only plan.dp=1: 'plan.dp' is not varied by"), std::string::npos) << column.err;
  EXPECT_NE(column.err.find("expected one of its parameters: variant, plan.tp, plan.pp"), std::string::npos)
      << column.err;
  const auto value = run_cli({"sweep", study.string(), "--out", (dir / "o").string(), "--only", "plan.tp=4"});
  EXPECT_EQ(value.status, 1);
  EXPECT_NE(value.err.find("'4' is not one of the values of plan.tp"), std::string::npos) << value.err;
  EXPECT_NE(value.err.find("expected one of: 1, 2, 8"), std::string::npos) << value.err;
  const auto form = run_cli({"sweep", study.string(), "--out", (dir / "o").string(), "--only", "plan.tp"});
  EXPECT_EQ(form.status, 1);
  EXPECT_NE(form.err.find("--only plan.tp: expected COLUMN=VALUE[,VALUE...]"), std::string::npos) << form.err;
  EXPECT_FALSE(fs::exists(dir / "o"));
  fs::remove_all(dir);
}

TEST(SweepCli, APlotThatCannotBeDrawnIsAnErrorButTheResultsAreKept) {
  const auto dir = fresh_dir("bad-plot");
  const auto study = write_study(dir, kTiny + R"(sweep:
  grid:
    plan.tp: [1]
  plots:
    - {x: plan.tp, y: model.name}
)");
  const auto r = run_cli({"sweep", study.string(), "--out", (dir / "o").string(), "-j", "1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("y 'model.name' is not a number at point 0000"), std::string::npos) << r.err;
  EXPECT_EQ(lines_of(read_file(dir / "o" / "results.csv")).size(), 2u);
  fs::remove_all(dir);
}

// A typo in a plot's column is bad input found when the study loads: exit 1
// naming the line, before any point runs.
TEST(SweepCli, APlotColumnThatIsATypoIsRefusedBeforeAnyPointRuns) {
  const auto dir = fresh_dir("typo-plot");
  const auto study = write_study(dir, kTiny + R"(sweep:
  grid:
    plan.tp: [1]
  plots:
    - {x: plan.tp, y: tokens_per_joule}
)");
  const auto r = run_cli({"sweep", study.string(), "--out", (dir / "o").string(), "-j", "1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("study.yaml:19:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sweep.plots[0].y: 'tokens_per_joule' is not a column trainsim writes"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "o" / "results.csv"));
  fs::remove_all(dir);
}

// A figure only some runs write (lost time to expert imbalance: uneven MoE
// routing) is in no point of a dense study, as in the balanced subset of
// scenarios/study-moe-dispatch.yaml: its plot is skipped with a note, the
// others are drawn, and the sweep succeeds.
TEST(SweepCli, APlotOfAFigureNoPointWritesIsSkippedWithANoteNotAnError) {
  const auto dir = fresh_dir("absent-figure-plot");
  const auto study = write_study(dir, kTiny + R"(sweep:
  grid:
    plan.tp: [1, 2]
  plots:
    - {x: plan.tp, y: lost_time.by_cause.expert_imbalance.fraction_of_gpu_time, file: imbalance.svg}
    - {x: plan.tp, y: tokens_per_s_per_gpu, file: throughput.svg}
)");
  const auto r = run_cli({"sweep", study.string(), "--out", (dir / "o").string(), "-j", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("note: " + study.string() +
                       ": sweep.plots[0] (imbalance.svg) skipped: no point of these results has its y "
                       "'lost_time.by_cause.expert_imbalance.fraction_of_gpu_time' (a figure that only some "
                       "runs write)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "o" / "plots" / "imbalance.svg"));
  EXPECT_TRUE(fs::exists(dir / "o" / "plots" / "throughput.svg"));
  fs::remove_all(dir);
}

// GPT-3 175B on 4 GPUs does not fit: dropped with its reason, or simulated
// with --allow-oom (its summary says it does not fit).
TEST(SweepCli, AllowOomSimulatesPointsThatDoNotFitInsteadOfDroppingThem) {
  const auto dir = fresh_dir("sweep-oom");
  const auto study = write_study(dir, kTiny + R"(sweep:
  grid:
    model.preset: [gpt3-125m, gpt3-175b]
)");
  const auto dropped = run_cli({"sweep", study.string(), "--out", (dir / "a").string(), "-j", "2"});
  ASSERT_EQ(dropped.status, 0) << dropped.err;
  EXPECT_NE(dropped.out.find("1 ok, 0 failed, 1 dropped (2 points)"), std::string::npos) << dropped.out;
  const auto csv = lines_of(read_file(dir / "a" / "results.csv"));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_NE(csv[2].find("does_not_fit_in_memory"), std::string::npos) << csv[2];

  const auto kept =
      run_cli({"sweep", study.string(), "--out", (dir / "b").string(), "-j", "2", "--allow-oom"});
  ASSERT_EQ(kept.status, 0) << kept.err;
  EXPECT_NE(kept.out.find("2 ok, 0 failed, 0 dropped (2 points)"), std::string::npos) << kept.out;
  const auto big = nlohmann::json::parse(read_file(dir / "b" / "points" / "0001" / "summary.json"));
  EXPECT_EQ(big["model"]["name"], "gpt3-175b");
  EXPECT_FALSE(big["fits_in_memory"].get<bool>());

  const auto variants = write_study(dir, kTiny + R"(variants:
  small: {model.preset: gpt3-125m}
  big: {model.preset: gpt3-175b}
)",
                                    "variants.yaml");
  const auto refused = run_cli({"compare", variants.string(), "--out", (dir / "c").string()});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("variant big cannot run: does_not_fit_in_memory"), std::string::npos)
      << refused.err;
  const auto compared =
      run_cli({"compare", variants.string(), "--out", (dir / "d").string(), "-j", "2", "--allow-oom"});
  ASSERT_EQ(compared.status, 0) << compared.err;
  EXPECT_NE(compared.out.find("2 variants, ratios to the first (small)"), std::string::npos) << compared.out;
  fs::remove_all(dir);
}

TEST(CompareCli, VariantsSideBySideWithRatiosToTheFirst) {
  const auto dir = fresh_dir("compare");
  const auto study = write_study(dir, kTiny + R"(variants:
  gpipe: {plan.schedule: gpipe, plan.pp: 2}
  1f1b: {plan.schedule: 1f1b, plan.pp: 2}
)");
  const auto out = dir / "out";
  const auto r = run_cli({"compare", study.string(), "--out", out.string(), "-j", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("2 variants, ratios to the first (gpipe)"), std::string::npos) << r.out;
  const auto gpipe = nlohmann::json::parse(read_file(out / "gpipe" / "summary.json"));
  const auto one_f_one_b = nlohmann::json::parse(read_file(out / "1f1b" / "summary.json"));
  const double ratio =
      one_f_one_b["iteration_time_s"].get<double>() / gpipe["iteration_time_s"].get<double>();
  std::string time_line, memory_line, energy_line, schedule_line;
  for (const auto& line : lines_of(r.out)) {
    if (line.rfind("  iteration time", 0) == 0)
      time_line = line;
    if (line.rfind("  peak memory", 0) == 0)
      memory_line = line;
    if (line.rfind("  energy per token", 0) == 0)
      energy_line = line;
    if (line.rfind("  plan.schedule", 0) == 0)
      schedule_line = line;
  }
  EXPECT_NE(time_line.find(fmt::format("({:.2f}x)", ratio)), std::string::npos) << r.out;
  for (const char* label : {"throughput (tokens/s)", "MFU", "bubble", "exposed communication"})
    EXPECT_NE(r.out.find(std::string("  ") + label), std::string::npos) << label << "\n" << r.out;
  // Memory and energy come from summary.json's memory.peak_bytes and
  // energy.energy_per_token_J (trainsim.summary/2); n/a only when absent.
  const bool has_memory = gpipe.contains("memory") && gpipe["memory"].contains("peak_bytes");
  const bool has_energy = gpipe.contains("energy") && gpipe["energy"].contains("energy_per_token_J");
  EXPECT_EQ(memory_line.find("n/a") == std::string::npos, has_memory) << r.out;
  EXPECT_EQ(energy_line.find("n/a") == std::string::npos, has_energy) << r.out;
  EXPECT_NE(schedule_line.find("gpipe"), std::string::npos) << r.out;
  EXPECT_NE(schedule_line.find("1f1b"), std::string::npos) << r.out;
  const auto csv = lines_of(read_file(out / "results.csv"));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_EQ(csv[1].rfind("gpipe,ok,gpipe,", 0), 0u) << csv[1];
  fs::remove_all(dir);
}

TEST(CompareCli, ScenarioFilesAreVariantsAndNeedToBeAtLeastTwo) {
  const auto dir = fresh_dir("compare-files");
  const auto a = write_study(dir, kTiny, "a.yaml");
  const auto b = write_study(dir, kTiny + "seed: 2\n", "b.yaml");
  const auto r = run_cli(
      {"compare", a.string(), b.string(), "--out", (dir / "o").string(), "-j", "2", "--set", "plan.pp=2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ratios to the first (tiny)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "o" / "tiny" / "summary.json"));
  EXPECT_TRUE(fs::exists(dir / "o" / "tiny-2" / "summary.json"));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "o" / "tiny-2" / "summary.json"))["plan"]["pp"], 2);

  const auto one = run_cli({"compare", a.string()});
  EXPECT_EQ(one.status, 1);
  EXPECT_NE(one.err.find("at least two variants"), std::string::npos) << one.err;
  const auto sweep = write_study(dir, kTpPpStudy, "sweep.yaml");
  const auto s = run_cli({"compare", a.string(), sweep.string()});
  EXPECT_EQ(s.status, 1);
  EXPECT_NE(s.err.find("run sweeps with `trainsim sweep"), std::string::npos) << s.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
