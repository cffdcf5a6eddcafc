// Issue 31, class 6, through the real CLI: merge never writes into a
// shard, a study's folder holds that study alone once it completes, a
// study's points find a trace named relative to the study, and export
// --chakra leaves no truncated file on a full disk.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/limited_cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;

const std::string kTiny = R"(name: tiny
cluster:
  gpu: A100
  nodes: 1
  gpus_per_node: 4
model:
  preset: gpt3-125m
plan:
  dp: auto
  tp: 1
  pp: 1
  micro_batch_size: 1
  global_batch_size: 8
)";

fs::path write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(StudyOutputs, MergeRefusesAnOutThatIsOrIsInsideAShard) {
  const auto dir = fresh_dir("merge-into-shard");
  const auto study = write(dir / "study.yaml", kTiny + "sweep: {grid: {plan.tp: [1, 2], plan.pp: [1, 2]}}\n");
  for (const char* shard : {"0", "1"})
    ASSERT_EQ(run_cli({"sweep", study.string(), "--shard", std::string(shard) + "/2", "--out",
                       (dir / (std::string("a") + shard)).string(), "-q", "-j", "2"})
                  .status,
              0);
  const std::string a0 = (dir / "a0").string(), a1 = (dir / "a1").string();
  const auto before = read_file(dir / "a0" / "results.json");
  // `merge a0 a1 --out a0` used to overwrite shard a0 (exit 0).
  const auto same = run_cli({"merge", a0, a1, "--out", a0});
  EXPECT_EQ(same.status, 1) << same.err;
  EXPECT_NE(
      same.err.find("--out " + a0 + ": is the shard " + a0 + " (merge would overwrite the shard's results)"),
      std::string::npos)
      << same.err;
  const auto trailing = run_cli({"merge", a0, a1, "--out", a0 + "/"});
  EXPECT_EQ(trailing.status, 1) << trailing.err;
  const auto inside = run_cli({"merge", a0, a1, "--out", a1 + "/points"});
  EXPECT_EQ(inside.status, 1) << inside.err;
  EXPECT_NE(inside.err.find("is inside the shard " + a1), std::string::npos) << inside.err;
  EXPECT_EQ(read_file(dir / "a0" / "results.json"), before);
  EXPECT_FALSE(fs::exists(dir / "a1" / "points" / "results.json"));
  // The shards may sit inside --out, as `sweep --slurm` lays them out.
  fs::create_directories(dir / "m" / "shards");
  fs::rename(dir / "a0", dir / "m" / "shards" / "shard-0");
  fs::rename(dir / "a1", dir / "m" / "shards" / "shard-1");
  const auto slurm = run_cli({"merge", (dir / "m/shards/shard-0").string(),
                              (dir / "m/shards/shard-1").string(), "--out", (dir / "m").string()});
  EXPECT_EQ(slurm.status, 0) << slurm.err;
  EXPECT_TRUE(fs::exists(dir / "m" / "results.csv"));
  fs::remove_all(dir);
}

TEST(StudyOutputs, ASmallerStudyInTheFolderOfALargerOneLeavesOnlyItsOwnPointsAndPlots) {
  const auto dir = fresh_dir("study-shrinks");
  const std::string big = kTiny +
                          "sweep:\n  grid: {plan.tp: [1, 2], plan.pp: [1, 2]}\n"
                          "  plots:\n    - {y: mfu, x: plan.tp, lines: plan.pp}\n";
  const auto study = write(dir / "study.yaml", big);
  const std::vector<std::string> args{"sweep", study.string(), "--out", (dir / "out").string(),
                                      "-q",    "-j",           "2"};
  auto html = args;
  html.push_back("--html");
  ASSERT_EQ(run_cli(html).status, 0);
  ASSERT_EQ(names_in(dir / "out" / "points"), (std::vector<std::string>{"0000", "0001", "0002", "0003"}));
  const auto kept = read_file(dir / "out" / "points" / "0000" / "summary.json");
  // The same study, fewer points and another plot: the first two points
  // are reused (resume is exact), the two it no longer has go.
  write(study, kTiny +
                   "sweep:\n  grid: {plan.tp: [1, 2], plan.pp: [1]}\n"
                   "  plots:\n    - {y: mfu, x: plan.tp, file: tp.svg}\n");
  const auto r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("finished earlier (reused)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sweep tiny: removed 2 point folders of an earlier study that this one does not have "
                       "(0002, 0003)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(names_in(dir / "out" / "points"), (std::vector<std::string>{"0000", "0001"}));
  EXPECT_EQ(names_in(dir / "out" / "plots"), (std::vector<std::string>{"tp.svg"}));
  EXPECT_FALSE(fs::exists(dir / "out" / "report.html"));  // it showed the earlier study
  EXPECT_EQ(read_file(dir / "out" / "points" / "0000" / "summary.json"), kept);
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "out" / "results.json"))["rows"].size(), 2u);
  fs::remove_all(dir);
}

TEST(StudyOutputs, AComparisonLeavesOnlyItsOwnVariantsFolders) {
  const auto dir = fresh_dir("compare-shrinks");
  const auto three =
      write(dir / "three.yaml", kTiny + "variants:\n  a: {plan.tp: 1}\n  b: {plan.tp: 2}\n  c: {}\n");
  ASSERT_EQ(run_cli({"compare", three.string(), "--out", (dir / "out").string(), "-q", "-j", "2"}).status, 0);
  const auto two = write(dir / "two.yaml", kTiny + "variants:\n  a: {plan.tp: 1}\n  x: {plan.tp: 2}\n");
  fs::create_directories(dir / "out" / "mine");  // not a point's folder: stays
  const auto r = run_cli({"compare", two.string(), "--out", (dir / "out").string(), "-q", "-j", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(names_in(dir / "out"),
            (std::vector<std::string>{"a", "mine", "results.csv", "results.json", "x"}));
  fs::remove_all(dir);
}

TEST(StudyOutputs, AStudyOfATraceNamedRelativeToItRunsEveryPoint) {
  // The trace's path was copied unchanged into points/ID/scenario.yaml, so
  // every point looked for it beside its own scenario.yaml and failed.
  const auto dir = fresh_dir("study-trace");
  fs::create_directories(dir / "study");
  fs::copy(fs::path(TRAINSIM_SOURCE_DIR) / "tests/fixtures/chakra/astra-sim/all_reduce_4npus_1MB",
           dir / "study" / "traces");
  write(dir / "study" / "study.yaml",
        "name: trace-study\ncluster: {gpu: A100, nodes: 1, gpus_per_node: 4}\nworkload: {chakra: traces}\n"
        "sweep: {grid: {cluster.nvlink.bandwidth: [100GBps, 300GBps]}}\n");
  // From another folder, so that neither the study's folder nor the points'
  // is the working directory.
  const auto r = run_cli({"sweep", "study/study.yaml", "--out", "out", "-q", "-j", "2"}, dir.string());
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sweep trace-study: 2 ok, 0 failed"), std::string::npos) << r.out;
  const auto point = read_file(dir / "out" / "points" / "0000" / "scenario.yaml");
  EXPECT_NE(point.find("chakra: " + (dir / "study" / "traces").string()), std::string::npos) << point;
  // A point still runs alone, from anywhere.
  const auto alone = run_cli({"run", (dir / "out" / "points" / "0001" / "scenario.yaml").string(), "-q",
                              "--out", (dir / "alone").string()});
  EXPECT_EQ(alone.status, 0) << alone.err;
  fs::remove_all(dir);
}

TEST(StudyOutputs, ExportToAFullDiskLeavesNoTruncatedTrace) {
  const auto dir = fresh_dir("export-full");
  fs::create_directories(dir / "trace");
  write(dir / "trace" / "notes.txt", "not the export's\n");
  // Room for the first rank files of quickstart (38-46 KB since 1F1B's
  // blocking sends tie each transfer to its receiver's op) but not for the
  // larger ones of its middle stages (53-67 KB).
  const auto mid = run_cli_limited(
      file_size_limit_kib(50), {"export", "scenarios/quickstart.yaml", "--chakra", (dir / "trace").string()});
  EXPECT_EQ(mid.status, 1) << mid.err;
  EXPECT_NE(mid.err.find(".et: error while writing: File too large"), std::string::npos) << mid.err;
  EXPECT_NE(mid.err.find("files of quickstart this export had written; nothing of it is left"),
            std::string::npos)
      << mid.err;
  EXPECT_EQ(names_in(dir / "trace"), (std::vector<std::string>{"notes.txt"}));
  // No room at all: the first file fails, nothing is written either.
  const auto none = run_cli_limited(
      file_size_limit_kib(4), {"export", "scenarios/quickstart.yaml", "--chakra", (dir / "trace").string()});
  EXPECT_EQ(none.status, 1) << none.err;
  EXPECT_NE(none.err.find("quickstart.0.et: error while writing"), std::string::npos) << none.err;
  EXPECT_EQ(names_in(dir / "trace"), (std::vector<std::string>{"notes.txt"}));
  // With room, the export is complete and replays.
  const auto ok = run_cli({"export", "scenarios/quickstart.yaml", "--chakra", (dir / "trace").string()});
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(names_in(dir / "trace").size(), 16u + 3u);  // 16 ranks, comm groups, the replay scenario, notes
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
