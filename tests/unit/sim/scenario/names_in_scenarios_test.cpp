// Every name a scenario gives (its own, its model's, its cluster's, a GPU's)
// is a name as platforms/names.hpp says, from the file or from --set, with
// the schema saying the same (issue 31, class 1).
#include <gtest/gtest.h>

#include "platforms/input_error.hpp"
#include "sim/scenario/json_schema.hpp"
#include "sim/scenario/relative_paths.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {
namespace {

const std::string kScenario = R"(name: small
cluster:
  gpu: H100
  nodes: 1
  gpus_per_node: 4
model:
  preset: gpt3-125m
plan:
  tp: 1
  pp: 1
  global_batch_size: 8
)";

std::vector<std::string> problems(const std::string& yaml, const std::vector<std::string>& overrides = {},
                                  const std::string& file = "t.yaml") {
  try {
    parse_scenario_text(yaml, file, overrides);
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

TEST(ScenarioNames, AScenarioNameThatIsAPathIsRefusedWithItsLine) {
  const auto p = problems("name: \"../../x\"\n" + kScenario.substr(kScenario.find('\n') + 1));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(
      p[0].rfind("t.yaml:1:7: name: '../../x' is not a valid name: it holds '/' (a name is 1 to 128", 0), 0u)
      << p[0];
  EXPECT_EQ(problems("name: /tmp/x\n" + kScenario.substr(kScenario.find('\n') + 1)).size(), 1u);
}

TEST(ScenarioNames, SetOfANameIsCheckedAndBlamedOnTheOption) {
  auto p = problems(kScenario, {"name=../x"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rfind("--set name=../x: name: '../x' is not a valid name", 0), 0u) << p[0];
  // A NUL from YAML's "\0": shown escaped, never cut short.
  p = problems(kScenario, {"name=\"q\\0z\""});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("'q\\0z' is not a valid name: it holds '\\0'"), std::string::npos) << p[0];
  p = problems(kScenario, {"name=\"\\e[2J\""});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].find('\x1b'), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("'\\x1b[2J'"), std::string::npos) << p[0];
}

TEST(ScenarioNames, ModelClusterAndGpuNamesAreNamesToo) {
  for (const auto& set : {"model.name=a/b", "cluster.name=..", "cluster.gpu={name: '-x', base: H100}"}) {
    const auto p = problems(kScenario, {set});
    ASSERT_EQ(p.size(), 1u) << set;
    EXPECT_NE(p[0].find("is not a valid name"), std::string::npos) << p[0];
  }
  const auto s = parse_scenario_text(kScenario, "t.yaml", {"model.name=my-model.v2", "cluster.name=lab_4"});
  EXPECT_EQ(s.model.name, "my-model.v2");
  EXPECT_EQ(s.cluster.name, "lab_4");
}

TEST(ScenarioNames, TheDefaultNameIsMadeFromTheFilesStem) {
  const std::string unnamed = kScenario.substr(kScenario.find('\n') + 1);
  EXPECT_EQ(parse_scenario_text(unnamed, "dir/my run.yaml").name, "my_run");
  // "...yaml" has the stem "..": runs/../ would be the folder above.
  EXPECT_EQ(parse_scenario_text(unnamed, "dir/...yaml").name, "scenario");
  EXPECT_EQ(parse_scenario_text(unnamed, "<from_dict>").name, "from_dict");
}

TEST(ScenarioNames, TheSchemaGivesEveryNameThePattern) {
  const auto schema = scenario_schema();
  const auto& props = schema["properties"];
  EXPECT_EQ(props["name"]["pattern"], "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$");
  EXPECT_EQ(props["model"]["properties"]["name"]["pattern"], props["name"]["pattern"]);
  EXPECT_EQ(props["cluster"]["properties"]["name"]["pattern"], props["name"]["pattern"]);
}

TEST(RelativePaths, ATracesPathsAreAnchoredAtTheFolderTheyWereWrittenIn) {
  YAML::Node root = YAML::Load(
      "name: t\ncluster: {gpu: H100}\nworkload: {chakra: traces/ring, comm_groups: g.json}\n"
      "description: traces/ring\n");
  anchor_relative_paths(root, "/studies/a");
  EXPECT_EQ(root["workload"]["chakra"].Scalar(), "/studies/a/traces/ring");
  EXPECT_EQ(root["workload"]["comm_groups"].Scalar(), "/studies/a/g.json");
  EXPECT_EQ(root["description"].Scalar(), "traces/ring");  // not a path
  YAML::Node absolute = YAML::Load("workload: {chakra: /data/ring}\n");
  anchor_relative_paths(absolute, "/studies/a");
  EXPECT_EQ(absolute["workload"]["chakra"].Scalar(), "/data/ring");
}

}  // namespace
}  // namespace trainsim::scenario
