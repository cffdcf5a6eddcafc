// model.moe.routing and its keys as the loader reads them: the kinds, the
// default seed, which keys go with which kind, and a measured
// tokens-per-expert file with an error naming file, line, column and value
// for every malformed row.
#include <gtest/gtest.h>

#include <fstream>

#include "platforms/input_error.hpp"
#include "sim/scenario/scenario.hpp"
#include "support/files.hpp"

namespace trainsim::sim {
namespace {
namespace fs = std::filesystem;

// A small MoE (4 layers, the first dense, 4 experts top-1) on one node.
std::string scenario(const std::string& moe_extra) {
  return "seed: 5\ncluster: {gpu: H100, nodes: 1}\nmodel:\n  layers: 4\n  hidden: 1024\n  heads: 8\n"
         "  seq_len: 1024\n  vocab: 8000\n  mlp: swiglu\n  moe:\n    experts: 4\n    top_k: 1\n"
         "    first_dense_layers: 1\n" +
         moe_extra + "plan: {dp: 8, expert_parallel: 4, global_batch_size: 8}\n";
}

// Loads the scenario from `dir` (relative routing files are looked for there).
workloads::ModelSpec model_of(const std::string& yaml, const fs::path& dir = fs::temp_directory_path()) {
  return scenario::parse_scenario_text(yaml, (dir / "s.yaml").string()).model;
}

std::vector<std::string> problems(const std::string& yaml, const fs::path& dir = fs::temp_directory_path()) {
  try {
    scenario::parse_scenario_text(yaml, (dir / "s.yaml").string());
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

std::string joined(const std::vector<std::string>& list) {
  std::string s;
  for (const auto& p : list)
    s += p + "\n";
  return s;
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(RoutingKeys, BalancedByDefaultDrawnKindsTakeTheirSkewAndTheScenariosSeed) {
  EXPECT_TRUE(model_of(scenario("")).moe.routing.balanced());
  EXPECT_TRUE(model_of(scenario("")).moe.dropless);
  const auto zipf = model_of(scenario("    routing: zipf\n    routing_skew: 1.2\n")).moe.routing;
  EXPECT_EQ(zipf.kind, workloads::RoutingKind::zipf);
  EXPECT_DOUBLE_EQ(zipf.skew, 1.2);
  EXPECT_EQ(zipf.seed, 5u);  // the scenario's
  const auto own = model_of(scenario("    routing: dirichlet\n    routing_skew: 0.5\n    routing_seed: 9\n"));
  EXPECT_EQ(own.moe.routing.seed, 9u);
  // A number for capacity_factor turns dropless off; none keeps it.
  EXPECT_FALSE(model_of(scenario("    capacity_factor: 1.25\n")).moe.dropless);
  EXPECT_TRUE(model_of(scenario("    capacity_factor: none\n")).moe.dropless);
}

TEST(RoutingKeys, EachKindTakesOnlyItsKeys) {
  std::string p = joined(problems(scenario("    routing: zipf\n")));
  EXPECT_NE(p.find("model.moe.routing_skew: missing"), std::string::npos) << p;
  p = joined(problems(scenario("    routing: balanced\n    routing_skew: 1\n")));
  EXPECT_NE(p.find("s.yaml:15:"), std::string::npos) << p;
  EXPECT_NE(p.find("applies to routing: zipf or dirichlet"), std::string::npos) << p;
  p = joined(problems(scenario("    routing: zipf\n    routing_skew: 1\n    routing_file: x.csv\n")));
  EXPECT_NE(p.find("model.moe.routing_file: given with routing: zipf"), std::string::npos) << p;
  p = joined(problems(scenario("    routing: measured\n")));
  EXPECT_NE(p.find("model.moe.routing_file: missing"), std::string::npos) << p;
  p = joined(problems(scenario("    routing: skewed\n")));
  EXPECT_NE(p.find("dirichlet"), std::string::npos) << p;
  p = joined(problems(scenario("    routing: zipf\n    routing_skew: -1\n")));
  EXPECT_NE(p.find("model.moe.routing_skew"), std::string::npos) << p;
}

TEST(RoutingKeys, AMeasuredTableIsReadRelativeToTheScenario) {
  const auto dir = testing::fresh_dir("routing-table");
  write(dir / "loads.csv",
        "# tokens per expert\nlayer,expert,tokens\nall,0,4\nall,1,2\nall,2,1\nall,3,1\n"
        "2,0,1\n2,1,1\n2,2,1\n2,3,5\n");
  const auto m = model_of(scenario("    routing: measured\n    routing_file: loads.csv\n"), dir);
  ASSERT_EQ(m.moe.routing.measured.size(), 2u);
  const auto loads = workloads::expert_loads(m);
  EXPECT_EQ(loads.of_layer(0).size(), 0u);  // dense
  EXPECT_EQ(loads.of_layer(1), (std::vector<double>{0.5, 0.25, 0.125, 0.125}));
  EXPECT_EQ(loads.of_layer(2), (std::vector<double>{0.125, 0.125, 0.125, 0.625}));
  fs::remove_all(dir);
}

TEST(RoutingKeys, EveryMalformedRowIsNamedWithItsFileAndLine) {
  const auto dir = testing::fresh_dir("routing-bad");
  write(dir / "bad.csv",
        "layer,expert,tokens\n1,0,1\n1,1,-2\n1,7,1\nx,0,1\n1,2\n1,0,3\n3,0,1\n3,1,1\n3,2,1\n3,3,0\n");
  const std::string p = joined(problems(scenario("    routing: measured\n    routing_file: bad.csv\n"), dir));
  EXPECT_NE(p.find("bad.csv:3: tokens '-2' is not a count"), std::string::npos) << p;
  EXPECT_NE(p.find("bad.csv:4: expert '7' is not an expert of this model; expected an integer from 0 to 3"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("bad.csv:5: layer 'x' is not a layer index"), std::string::npos) << p;
  EXPECT_NE(p.find("bad.csv:6: '1,2' has 2 fields"), std::string::npos) << p;
  EXPECT_NE(p.find("bad.csv:7: layer 1, expert 0 is given twice (first on line 2)"), std::string::npos) << p;
  EXPECT_NE(p.find("bad.csv:2: layer 1 lists 1 of the 4 experts (missing: 1, 2, 3)"), std::string::npos) << p;
  EXPECT_NE(p.find("model.moe.routing_file"), std::string::npos) << p;
  // A wrong header, and a file that is not there.
  write(dir / "header.csv", "expert,layer,tokens\n0,1,1\n");
  EXPECT_NE(joined(problems(scenario("    routing: measured\n    routing_file: header.csv\n"), dir))
                .find("header.csv:1: the header is 'expert,layer,tokens'; expected 'layer,expert,tokens'"),
            std::string::npos);
  EXPECT_NE(joined(problems(scenario("    routing: measured\n    routing_file: nowhere.csv\n"), dir))
                .find("nowhere.csv"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(RoutingKeys, AMeasuredTableMustCoverEveryMoeLayerAndOnlyThem) {
  const auto dir = testing::fresh_dir("routing-cover");
  write(dir / "partial.csv", "layer,expert,tokens\n1,0,1\n1,1,1\n1,2,1\n1,3,1\n0,0,1\n0,1,1\n0,2,1\n0,3,1\n");
  const std::string p =
      joined(problems(scenario("    routing: measured\n    routing_file: partial.csv\n"), dir));
  EXPECT_NE(p.find("layer 0 is not a MoE layer"), std::string::npos) << p;
  EXPECT_NE(p.find("gives no loads for MoE layers 2, 3"), std::string::npos) << p;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::sim
