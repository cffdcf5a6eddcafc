// Issue 31, class 1, through the real CLI: a name is a label
// (platforms/names.hpp), wherever it enters (the scenario, --set, a study,
// its variants and plots, export --name), and nothing from the input
// reaches the terminal raw (platforms/printable_text.hpp).
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <fstream>

#include "platforms/names.hpp"
#include "support/scenario_text.hpp"

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

// Every file and folder under `dir`.
std::size_t entries_in(const fs::path& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    ++n;
  return n;
}

// A scenario in dir/a/b/, run from there with the default folder (runs/<name>):
// nothing may appear outside dir/a/b/runs.
struct Sandbox {
  fs::path root, cwd;
  explicit Sandbox(const std::string& name) : root(fresh_dir(name)), cwd(root / "a" / "b") {
    fs::create_directories(cwd);
  }
  fs::path write(const std::string& file, const std::string& text) const {
    std::ofstream(cwd / file) << text;
    return cwd / file;
  }
  // Only the scenario files and what lives under runs/ (itself included).
  std::size_t outside_runs() const {
    std::size_t n = 0;
    for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
      const auto rel = fs::relative(it->path(), cwd);
      if (rel.string().rfind("runs", 0) != 0 && it->path().extension() != ".yaml" &&
          it->path() != root / "a" && it->path() != cwd)
        ++n;
    }
    return n;
  }
  ~Sandbox() { fs::remove_all(root); }
};

TEST(NamePolicy, AScenarioNameThatClimbsOutOfRunsIsRefusedWithItsLine) {
  Sandbox box("names-climb");
  for (const char* name : {"\"../../x\"", "/tmp/trainsim-escaped-x", "..", ".hidden", "-rf"}) {
    box.write("s.yaml", with(kTiny, "name: tiny", std::string("name: ") + name));
    const auto r = run_cli({"run", "s.yaml", "-q"}, box.cwd.string());
    expect_refused(r, "s.yaml:1:7: name: ");
    EXPECT_NE(r.err.find("is not a valid name"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a name is 1 to 128 letters, digits, '.', '-' or '_'"), std::string::npos) << r.err;
  }
  EXPECT_EQ(box.outside_runs(), 0u);
  EXPECT_FALSE(fs::exists("/tmp/trainsim-escaped-x"));
}

TEST(NamePolicy, SetOfANameIsRefusedNamingTheOption) {
  Sandbox box("names-set");
  box.write("s.yaml", kTiny);
  const auto r = run_cli({"run", "s.yaml", "-q", "--set", "name=../x"}, box.cwd.string());
  expect_refused(r, "--set name=../x: name: '../x' is not a valid name: it holds '/'");
  EXPECT_EQ(box.outside_runs(), 0u);
}

TEST(NamePolicy, ANulInANameIsRefusedAndShownEscapedInsteadOfCuttingTheName) {
  // Exited 0 having written one file, runs/q, and lost every output.
  Sandbox box("names-nul");
  box.write("s.yaml", kTiny);
  const auto r = run_cli({"run", "s.yaml", "-q", "--set", "name=\"q\\0z\""}, box.cwd.string());
  expect_refused(r, "'q\\0z' is not a valid name: it holds '\\0'");
  EXPECT_FALSE(fs::exists(box.cwd / "runs" / "q"));
}

TEST(NamePolicy, ControlCharactersInAnyValueReachTheTerminalEscaped) {
  const auto r =
      run_cli({"run", "scenarios/quickstart.yaml", "-q", "--set", "plan.schedule=\"\\e]0;owned\\a\""});
  expect_refused(r, "'\\x1b]0;owned\\x07' is not a known value");
  const auto name = run_cli({"run", "scenarios/quickstart.yaml", "-q", "--set", "name=\"\\e[2J\""});
  expect_refused(name, "'\\x1b[2J' is not a valid name: it holds '\\x1b'");
  // CLI11's own errors quote the arguments too.
  const auto option = run_cli({"run", "scenarios/quickstart.yaml", "--\x1b[31mbad"});
  expect_refused(option, "--\\x1b[31mbad");
  const auto file = run_cli({"run", "\x1b[2J.yaml"});
  expect_refused(file, "\\x1b[2J.yaml: ");
}

TEST(NamePolicy, ModelClusterAndGpuNamesAreNames) {
  for (const char* set :
       {"model.name=a/b", "cluster.name=\"x\\ny\"", "cluster.gpu={name: ../g, base: A100}"}) {
    const auto r = run_cli({"run", "scenarios/quickstart.yaml", "-q", "--set", set});
    expect_refused(r, "is not a valid name");
  }
}

TEST(NamePolicy, AFileNamedWithDotsGetsAFolderInsideRuns) {
  // "...yaml": its stem ".." was the default name, so runs/.. was the folder.
  Sandbox box("names-dots");
  box.write("...yaml", with(kTiny, "name: tiny\n", ""));
  const auto r = run_cli({"run", "...yaml", "-q"}, box.cwd.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(box.cwd / "runs" / "scenario" / "run.complete"));
  EXPECT_EQ(box.outside_runs(), 0u);
}

TEST(NamePolicy, AStudyNameItsVariantsAndItsPlotsStayInsideTheStudysFolder) {
  Sandbox box("names-study");
  box.write("study.yaml",
            with(kTiny, "name: tiny", "name: ../../escaped") + "sweep: {grid: {plan.tp: [1, 2]}}\n");
  expect_refused(run_cli({"sweep", "study.yaml", "-q"}, box.cwd.string()),
                 "study.yaml:1:7: name: '../../escaped' is not a valid name");
  box.write("variants.yaml", kTiny + "variants:\n  \"../v\": {plan.tp: 2}\n  ok: {plan.tp: 1}\n");
  expect_refused(run_cli({"compare", "variants.yaml", "-q"}, box.cwd.string()),
                 "variants.../v: a variant's '../v' is not a valid name");
  box.write(
      "plot.yaml",
      kTiny + "sweep:\n  grid: {plan.tp: [1, 2]}\n  plots:\n    - {y: mfu, x: plan.tp, file: ../../p.svg}\n");
  expect_refused(run_cli({"sweep", "plot.yaml", "-q"}, box.cwd.string()),
                 "sweep.plots[0].file: '../../p.svg' is not a valid name");
  EXPECT_EQ(box.outside_runs(), 0u);
}

TEST(NamePolicy, ExportNameIsANameAndStaysInsideItsFolder) {
  Sandbox box("names-export");
  box.write("s.yaml", kTiny);
  const auto r = run_cli({"export", "s.yaml", "--chakra", "out", "--name", "../../x"}, box.cwd.string());
  expect_refused(r, "--name ../../x: '../../x' is not a valid name: it holds '/'");
  EXPECT_EQ(entries_in(box.root), 3u);  // a/, a/b/, a/b/s.yaml
  const auto ok = run_cli({"export", "s.yaml", "--chakra", "out", "--name", "t-1"}, box.cwd.string());
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(fs::exists(box.cwd / "out" / "t-1.yaml"));
  EXPECT_TRUE(fs::exists(box.cwd / "out" / "t-1.0.et"));
}

// Every name found in `node`: the values of `name` keys and the names of variants.
void collect_names(const YAML::Node& node, bool variants, std::vector<std::string>& out) {
  if (node.IsSequence())
    for (const auto& item : node)
      collect_names(item, false, out);
  if (!node.IsMap())
    return;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (variants)
      out.push_back(key);
    if (key == "name" && kv.second.IsScalar())
      out.push_back(kv.second.Scalar());
    collect_names(kv.second, key == "variants", out);
  }
}

TEST(NamePolicy, EveryShippedNameIsAName) {
  // What the policy was drawn from: the names of every scenario and study
  // shipped (scenarios/, the presets), and their variants'.
  std::vector<std::string> names;
  for (const char* folder : {"scenarios", "platforms/presets", "tests/fixtures/schema/good"})
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(TRAINSIM_SOURCE_DIR) / folder))
      if (entry.path().extension() == ".yaml")
        collect_names(YAML::LoadFile(entry.path().string()), false, names);
  EXPECT_GT(names.size(), 50u);
  for (const auto& name : names)
    EXPECT_TRUE(platforms::is_valid_name(name)) << name;
}

}  // namespace
}  // namespace trainsim::testing
