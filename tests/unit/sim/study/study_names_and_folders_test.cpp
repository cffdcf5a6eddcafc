// Issue 31, classes 1 and 6, in the study layer: the study's own names
// (its name, its variants', its plots' files) follow platforms/names.hpp;
// a point carries its trace by a path that works from its folder; a
// completed study leaves only its own points and plots in its folder.
#include <gtest/gtest.h>

#include <fstream>

#include "platforms/input_error.hpp"
#include "sim/study/study_file.hpp"
#include "sim/study/study_folder.hpp"
#include "sim/study/study_points.hpp"
#include "support/files.hpp"

namespace trainsim::sim {
namespace {
namespace fs = std::filesystem;

const std::string kBase = R"(cluster:
  gpu: A100
  nodes: 1
  gpus_per_node: 4
model:
  preset: gpt3-125m
plan:
  dp: auto
  tp: 1
  pp: 1
  global_batch_size: 8
)";

std::vector<std::string> problems_of(const std::string& text) {
  try {
    parse_study_text(text, "study.yaml");
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

TEST(StudyNames, AStudyNameThatIsAPathIsRefusedWithItsLine) {
  const auto p = problems_of("name: ../escape\n" + kBase + "sweep: {grid: {plan.tp: [1, 2]}}\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rfind("study.yaml:1:7: name: '../escape' is not a valid name: it holds '/'", 0), 0u) << p[0];
  // Without a name, the file's stem made into a name.
  EXPECT_EQ(parse_study_text(kBase + "sweep: {grid: {plan.tp: [1, 2]}}\n", "dir/my study.yaml").name,
            "my_study");
  EXPECT_EQ(parse_study_text(kBase + "sweep: {grid: {plan.tp: [1, 2]}}\n", "dir/...yaml").name, "study");
}

TEST(StudyNames, VariantNamesAreNames) {
  const auto p =
      problems_of(kBase + "variants:\n  ok: {plan.tp: 2}\n  \"../up\": {plan.tp: 4}\n  \"\": {}\n");
  ASSERT_EQ(p.size(), 2u) << p[0];
  EXPECT_NE(p[0].find("study.yaml:14:3: variants.../up: a variant's '../up' is not a valid name"),
            std::string::npos)
      << p[0];
  EXPECT_NE(p[1].find("'' is not a valid name: it is empty"), std::string::npos) << p[1];
}

TEST(StudyNames, APlotFileIsANameEndingInSvg) {
  for (const char* file : {"../x.svg", "\"a\\0b.svg\"", ".svg", "x.png"}) {
    const auto p =
        problems_of(kBase + "sweep:\n  grid: {plan.tp: [1, 2]}\n  plots:\n    - {y: mfu, x: plan.tp, file: " +
                    std::string(file) + "}\n");
    ASSERT_EQ(p.size(), 1u) << file;
    EXPECT_NE(p[0].find("sweep.plots[0].file"), std::string::npos) << p[0];
    EXPECT_EQ(p[0].find('\0'), std::string::npos) << p[0];
  }
}

TEST(StudyPoints, ATraceNamedRelativeToTheStudyIsNamedByItsAbsolutePathInEachPoint) {
  const fs::path dir = testing::fresh_dir("study-trace");
  fs::copy(fs::path(TRAINSIM_SOURCE_DIR) / "tests/fixtures/chakra/astra-sim/all_reduce_4npus_1MB",
           dir / "traces");
  const std::string text =
      "cluster: {gpu: A100, nodes: 1, gpus_per_node: 4}\nworkload: {chakra: traces}\nsweep: {grid: {seed: "
      "[1, 2]}}\n";
  std::ofstream(dir / "study.yaml") << text;
  const auto points = prepare_points(read_study_file((dir / "study.yaml").string()), {});
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    ASSERT_FALSE(p.dropped) << *p.dropped;
    EXPECT_NE(p.scenario_yaml.find("chakra: " + (dir / "traces").string()), std::string::npos)
        << p.scenario_yaml;
  }
  fs::remove_all(dir);
}

void point_folder(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "scenario.yaml") << "name: x\n";
  std::ofstream(dir / "run.log") << "";
}

TEST(StudyFolder, ACompletedStudyRemovesThePointsItDoesNotHaveAndNothingElse) {
  const fs::path root = testing::fresh_dir("study-folder");
  for (const char* id : {"0000", "0001", "0002", "0003", "0002.partial"})
    point_folder(root / id);
  fs::create_directories(root / "mine");  // the user's own folder: no scenario.yaml
  std::ofstream(root / "mine" / "notes.txt") << "keep\n";
  const auto removed = remove_other_points(root, {"0000", "0001"});
  EXPECT_EQ(removed, (std::vector<std::string>{"0002", "0003"}));
  EXPECT_TRUE(fs::exists(root / "0000" / "scenario.yaml"));
  EXPECT_TRUE(fs::exists(root / "0001"));
  EXPECT_FALSE(fs::exists(root / "0002"));
  EXPECT_FALSE(fs::exists(root / "0002.partial"));
  EXPECT_TRUE(fs::exists(root / "mine" / "notes.txt"));
  EXPECT_EQ(describe_removed_points(removed),
            "removed 2 point folders of an earlier study that this one does not have (0002, 0003)");
  EXPECT_EQ(describe_removed_points({}), "");
  fs::remove_all(root);
}

TEST(StudyFolder, PlotsAndAPageOfAnEarlierStudyGo) {
  const fs::path dir = testing::fresh_dir("study-files");
  fs::create_directories(dir / "plots");
  for (const char* f : {"plots/a.svg", "plots/old.svg", "plots/readme.txt", "report.html", "results.csv"})
    std::ofstream(dir / f) << "x";
  const auto removed = remove_stale_study_files(dir, {dir / "results.csv", dir / "plots" / "a.svg"}, false);
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_TRUE(fs::exists(dir / "plots" / "a.svg"));
  EXPECT_FALSE(fs::exists(dir / "plots" / "old.svg"));
  EXPECT_TRUE(fs::exists(dir / "plots" / "readme.txt"));
  EXPECT_FALSE(fs::exists(dir / "report.html"));
  std::ofstream(dir / "report.html") << "x";
  EXPECT_TRUE(remove_stale_study_files(dir, {dir / "report.html", dir / "plots" / "a.svg"}, true).empty());
  EXPECT_TRUE(fs::exists(dir / "report.html"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::sim
