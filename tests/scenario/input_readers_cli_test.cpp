// Issue 31, classes 3 and 4, through the real CLI: every file trainsim reads
// goes through one reader with one set of limits (platforms/input_file,
// platforms/directory_walk), every YAML input through one loader that
// refuses what YAML::Load would drop (platforms/yaml_document), merge reads
// results.json strictly, validate checks its rows like `run`, and a long
// list of problems prints 20 lines and a count. Each test is one of the
// issue's reproducers or a class-mate; each ends with exit status 1 and a
// message naming the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/cli.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;

const std::string& kGood = kSmallPipelineScenario;

fs::path fifo_in(const fs::path& dir, const std::string& name) {
  const auto path = dir / name;
  EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
  return path;
}

// ---- class 3: one reader for every input ---------------------------------

TEST(InputReaders, ExportRefusesADeviceADirectoryAndAFifo) {
  const auto dir = fresh_dir("readers-export");
  const auto out = (dir / "trace").string();
  expect_refused(run_cli({"export", "/dev/zero", "--chakra", out}),
                 "/dev/zero: is not a regular file but a character device");
  expect_refused(run_cli({"export", "scenarios", "--chakra", out}), "scenarios: is a directory");
  expect_refused(run_cli({"export", fifo_in(dir, "s.yaml").string(), "--chakra", out}),
                 "is not a regular file but a pipe");
  EXPECT_FALSE(fs::exists(out));
}

TEST(InputReaders, ExportHasTheSizeGuardOfRun) {
  const auto r = run_cli({"export", "scenarios/quickstart.yaml", "--chakra",
                          (fresh_dir("readers-export-size") / "t").string(), "--set",
                          "plan.global_batch_size=1000000000"});
  expect_refused(r, "too large for this machine");
}

TEST(InputReaders, SchemaCheckRefusesADirectoryAndDoesNotWaitOnAFifo) {
  expect_refused(run_cli({"schema", "--check", "scenarios"}), "scenarios: is a directory");
  const auto dir = fresh_dir("readers-schema");
  expect_refused(run_cli({"schema", "--check", fifo_in(dir, "s.yaml").string()}), "pipe");
  const auto good = run_cli({"schema", "--check", "scenarios/quickstart.yaml", "scenarios/study-tp-pp.yaml"});
  EXPECT_EQ(good.status, 0) << good.err;
}

TEST(InputReaders, ASymbolicLinkLoopInAChakraFolderIsNamed) {
  const auto dir = fresh_dir("readers-chakra-loop");
  fs::create_directories(dir / "trace");
  fs::create_symlink(dir / "trace" / "t.0.et", dir / "trace" / "t.0.et");
  const auto r = run_cli({"run", "scenarios/chakra-astra-sim-ring.yaml", "-q", "--out",
                          (dir / "out").string(), "--chakra", (dir / "trace").string()});
  expect_refused(r, "t.0.et: cannot read this Chakra trace file: a symbolic link loop");
}

TEST(InputReaders, AChakraPathThatIsALinkLoopIsNamed) {
  const auto dir = fresh_dir("readers-chakra-self");
  fs::create_symlink(dir / "trace", dir / "trace");
  const auto r = run_cli({"run", "scenarios/chakra-astra-sim-ring.yaml", "-q", "--out",
                          (dir / "out").string(), "--chakra", (dir / "trace").string()});
  expect_refused(r, "cannot read the Chakra trace: a symbolic link loop");
}

TEST(InputReaders, AChakraRankBeyondAnIntIsRefusedNotConverted) {
  const auto dir = fresh_dir("readers-chakra-rank");
  std::ofstream(dir / "t.99999999999999999999.et") << "x";
  const auto r = run_cli({"run", "scenarios/chakra-astra-sim-ring.yaml", "-q", "--out",
                          (dir / "out").string(), "--chakra", dir.string()});
  expect_refused(r, "rank 99999999999999999999 is beyond the most GPUs a cluster has");
}

TEST(InputReaders, ADeviceAsAChakraTraceIsNotRead) {
  const auto dir = fresh_dir("readers-chakra-device");
  expect_refused(run_cli({"run", "scenarios/chakra-astra-sim-ring.yaml", "-q", "--out",
                          (dir / "out").string(), "--chakra", "/dev/zero"}),
                 "/dev/zero: no Chakra trace files");
}

TEST(InputReaders, ReportRefusesARunArchiveThatIsAFifo) {
  const auto dir = fresh_dir("readers-report");
  fifo_in(dir, "run.trainsim");
  expect_refused(run_cli({"report", dir.string()}), "no saved run here");
}

// ---- merge: results.json read strictly ------------------------------------

TEST(InputReaders, MergeNamesEveryWrongFieldOfAResultsJsonOfTheWrongShape) {
  const auto dir = fresh_dir("readers-merge-shape");
  fs::create_directories(dir / "a");
  std::ofstream(dir / "a" / "results.json")
      << R"({"schema": "trainsim.results/1", "trainsim_version": "0.1.0",
             "study": {"name": "s", "file": "s.yaml", "id": 7, "points": "4", "parameters": [], "plots": []},
             "shard": {"index": 0, "count": 2}, "columns": [],
             "rows": [{"point": "0000", "status": "okk"}, {"point": "zz", "status": "ok", "x": [1]}]})";
  const auto r = run_cli({"merge", (dir / "a").string(), "--out", (dir / "m").string()});
  const std::string file = (dir / "a" / "results.json").string();
  expect_refused(r, file + ": study.id: a number 7, expected text");
  EXPECT_NE(r.err.find(file + ": study.points: text \"4\", expected a whole number from 0 to 1000000"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file + ": rows[0].status: text \"okk\", expected ok, failed or dropped"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file + ": rows[1].point: text \"zz\", expected the point's number"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file + ": rows[1].x: a list [1], expected a number, text, true, false or null"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "m"));
}

TEST(InputReaders, MergeRefusesAPlotFileOutsideItsPlotsFolder) {
  const auto dir = fresh_dir("readers-merge-plot");
  fs::create_directories(dir / "a");
  std::ofstream(dir / "a" / "results.json")
      << R"({"schema": "trainsim.results/1", "trainsim_version": "0.1.0",
             "study": {"name": "s", "file": "s.yaml", "id": "1", "points": 1, "parameters": [],
                       "plots": [{"x": "a", "y": "b", "file": "../../escape.svg"}]},
             "shard": {"index": 0, "count": 1}, "columns": [], "rows": []})";
  expect_refused(run_cli({"merge", (dir / "a").string(), "--out", (dir / "m").string()}),
                 "study.plots[0].file: text \"../../escape.svg\", expected a plain file name ending in .svg");
}

TEST(InputReaders, MergeReadsResultsJsonThroughTheReader) {
  const auto dir = fresh_dir("readers-merge-kinds");
  fs::create_directories(dir / "a" / "results.json");
  fs::create_directories(dir / "b");
  fifo_in(dir / "b", "results.json");
  const auto r =
      run_cli({"merge", (dir / "a").string(), (dir / "b").string(), "--out", (dir / "m").string()});
  expect_refused(r, "results.json: is a directory");
  EXPECT_NE(r.err.find("results.json: is not a regular file but a pipe"), std::string::npos) << r.err;
}

// ---- validate ---------------------------------------------------------------

const char* kHeader =
    "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
    "sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),set";

TEST(InputReaders, ValidateRefusesADuplicatedColumnNamingBothPositions) {
  const auto csv = write_temp_file("dup.csv", std::string(kHeader) + ",# GPUs\n" +
                                                  "3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2,check,64\n");
  expect_refused(
      run_cli({"validate", csv.string()}),
      "dup.csv:1: column '# GPUs' is given twice, as columns 2 and 14 (expected each column once)");
}

TEST(InputReaders, ValidateRefusesASubnormalMeasuredTime) {
  const auto csv = write_temp_file(
      "tiny.csv", std::string(kHeader) + "\n" + "3.6,64,512,8,3072,32,30,2048,2,32,1,4e-320,check\n");
  const auto r = run_cli({"validate", csv.string()});
  expect_refused(r, "tiny.csv:2: iteration time (ms): '4e-320' is not a number from 0.001 to 1e+10");
  EXPECT_EQ(r.out.find("MAPE"), std::string::npos) << r.out;
}

TEST(InputReaders, AMillionUnknownColumnsPrintTwentyLinesAndACount) {
  std::string header = kHeader;
  header.reserve(header.size() + 4'000'000);
  for (int i = 0; i < 1'000'000; ++i)
    header += ",x";
  const auto csv = write_temp_file("wide.csv", header + "\n");
  const auto r = run_cli({"validate", csv.string()});
  EXPECT_EQ(r.status, 1) << r.err.substr(0, 2000);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 21) << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find("error: ... and 999,980 more problems\n"), std::string::npos) << r.err.substr(0, 3000);
}

TEST(InputReaders, ValidateGuardsTheSizeOfEveryRowBeforeSimulatingIt) {
  const auto csv = write_temp_file(
      "big.csv", std::string(kHeader) + "\n" + "3.6,64,1000000000,8,3072,32,30,2048,2,32,1,3975.2,check\n");
  const auto r = run_cli({"validate", csv.string()});
  expect_refused(r, "big.csv:2: this row gives a bad scenario:");
  EXPECT_NE(r.err.find("too large for this machine: the estimate is"), std::string::npos) << r.err;
}

TEST(InputReaders, ValidateWithATemplateOfZeroGpusPerNodeChecksItsRowsInsteadOfDividingByZero) {
  // It died of SIGFPE (exit 136); the row sets gpus_per_node itself, so what
  // is reported is the row's own problem (30 layers over 4 stages).
  const auto csv = write_temp_file(
      "one.csv", std::string(kHeader) + "\n" + "3.6,64,512,8,3072,32,30,2048,1,16,4,4000,check\n");
  const auto tpl = csv.parent_path() / "template.yaml";  // write_temp_file would empty the folder
  std::ofstream(tpl) << with(kGood, "gpus_per_node: 8", "gpus_per_node: 0");
  expect_refused(run_cli({"validate", csv.string(), "--template", tpl.string()}),
                 "one.csv:2: this row gives a bad scenario");
}

// ---- class 4: nothing of the input silently dropped ------------------------

TEST(IgnoredInput, ASecondDocumentInAScenarioIsRefusedAtItsLine) {
  expect_refused(run_text(kGood + "---\nplan: {tp: 8}\n"),
                 "scenario.yaml:14:1: a second YAML document (after `---`), which trainsim would ignore");
}

TEST(IgnoredInput, ASecondDocumentInASetValueIsRefusedNamingTheOption) {
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "-q", "--out",
                          fresh_dir("ignored-set").string(), "--set", "plan.tp=4\n---\n8"});
  // The option is quoted escaped (platforms/printable_text.hpp).
  expect_refused(r, "--set plan.tp=4\\x0a---\\x0a8: a second YAML document");
}

TEST(IgnoredInput, AYamlTagInAScenarioIsRefusedAtItsLine) {
  expect_refused(run_text(with(kGood, "gpu: A100-80GB", "gpu: !!python/object:os.system A100-80GB")),
                 "scenario.yaml:2:8: YAML tag '!!python/object:os.system' refused");
  expect_refused(run_text(with(kGood, "nodes: 2", "nodes: !!int 2")),
                 "scenario.yaml:3:10: YAML tag '!!int' refused");
}

TEST(IgnoredInput, ASecondDocumentOrATagInAStudyIsRefused) {
  const auto dir = fresh_dir("ignored-study");
  const auto two =
      write_temp_file("two.yaml", kGood + "sweep: {plan.pp: [2, 4]}\n---\nsweep: {plan.pp: [1]}\n");
  expect_refused(run_cli({"sweep", two.string(), "--quiet", "--out", (dir / "a").string()}),
                 "two.yaml:15:1: a second YAML document");
  const auto tag = write_temp_file("tag.yaml", kGood + "sweep: {plan.pp: !!seq [2, 4]}\n");
  expect_refused(run_cli({"sweep", tag.string(), "--quiet", "--out", (dir / "b").string()}),
                 "tag.yaml:14:18: YAML tag '!!seq' refused");
}

TEST(IgnoredInput, SchemaCheckAndExportRefuseASecondDocumentToo) {
  const auto path = write_temp_file("scenario.yaml", kGood + "---\n");
  expect_refused(run_cli({"schema", "--check", path.string()}), "scenario.yaml:14:1: a second YAML document");
  expect_refused(run_cli({"export", path.string(), "--chakra", (path.parent_path() / "t").string()}),
                 "scenario.yaml:14:1: a second YAML document");
}

}  // namespace
}  // namespace trainsim::testing
