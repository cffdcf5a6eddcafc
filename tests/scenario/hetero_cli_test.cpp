// Heterogeneous clusters through the CLI: `trainsim run --balance auto` on
// the shipped studies (balanced beats even on mixed hardware, ties on
// uniform hardware), plan.stage_layers / plan.dp_micro_batches errors, and
// tokens/s under uneven shares.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

nlohmann::json summary_of(const std::filesystem::path& dir) {
  return nlohmann::json::parse(read_file(dir / "summary.json"));
}

TEST(HeteroCli, BalanceAutoBeatsTheEvenSplitOnAMixedPipelineAndReportWritesItAgain) {
  const auto out = fresh_dir("hetero-pipeline");
  const auto r =
      run_cli({"run", "scenarios/hetero-a100-h100.yaml", "--balance", "auto", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("balance (--balance auto"), std::string::npos) << r.out;
  const auto s = summary_of(out);
  const auto& b = s.at("balance");
  const double even = b.at("even").at("iteration_time_s"), balanced = b.at("balanced").at("iteration_time_s");
  EXPECT_LT(balanced, 0.9 * even);
  EXPECT_EQ(b.at("even").at("stage_layers"), nlohmann::json::parse("[10, 10, 10, 10]"));
  EXPECT_FALSE(b.at("same_partition").get<bool>());
  // The run's own outputs are the balanced split's; the even split's are in even/.
  EXPECT_EQ(s.at("plan").at("stage_layers"), b.at("balanced").at("stage_layers"));
  EXPECT_DOUBLE_EQ(s.at("iteration_time_s").get<double>(), balanced);
  EXPECT_DOUBLE_EQ(summary_of(out / "even").at("iteration_time_s").get<double>(), even);
  const auto& layers = b.at("balanced").at("stage_layers");
  EXPECT_LT(layers[0].get<int>() + layers[1].get<int>(), layers[2].get<int>() + layers[3].get<int>());

  // `trainsim report` writes the balance block and the balanced plan again.
  const auto again = run_cli({"report", out.string(), "--quiet"});
  ASSERT_EQ(again.status, 0) << again.err;
  const auto regenerated = summary_of(out);
  EXPECT_EQ(regenerated.at("balance"), b);
  EXPECT_EQ(regenerated.at("plan"), s.at("plan"));
  EXPECT_EQ(regenerated.at("iteration_time_s"), s.at("iteration_time_s"));
  std::filesystem::remove_all(out);
}

TEST(HeteroCli, BalanceAutoSearchesDataParallelSharesWhenReplicasDifferInGpus) {
  const auto out = fresh_dir("hetero-dp");
  const auto r = run_cli({"run", "scenarios/hetero-a100-h100-dp.yaml", "--balance", "auto", "--quiet",
                          "--out", out.string(), "--set", "plan.global_batch_size=16"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto s = summary_of(out);
  const auto& b = s.at("balance");
  EXPECT_TRUE(b.at("searched_dp_shares").get<bool>());
  const auto shares = b.at("balanced").at("dp_micro_batches").get<std::vector<int>>();
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0] + shares[1], 16);
  EXPECT_GT(shares[1], shares[0]);  // replica 1 runs on the H100s
  EXPECT_LT(b.at("balanced").at("iteration_time_s").get<double>(),
            0.9 * b.at("even").at("iteration_time_s").get<double>());
  std::filesystem::remove_all(out);
}

TEST(HeteroCli, BalanceAutoTiesOnAUniformClusterWhereTheEvenSplitIsBest) {
  const auto scenario = write_temp_file("uniform.yaml", R"(name: uniform
cluster: {gpu: A100-80GB, nodes: 4, gpus_per_node: 8}
model: {preset: gpt3-175b, layers: 16}
plan: {tp: 8, pp: 4, micro_batch_size: 1, global_batch_size: 8, recompute: full}
)");
  const auto out = fresh_dir("hetero-uniform");
  const auto r = run_cli({"run", scenario.string(), "--balance", "auto", "--quiet", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto s = summary_of(out);
  const auto& b = s.at("balance");
  EXPECT_TRUE(b.at("same_partition").get<bool>());
  EXPECT_EQ(b.at("balanced").at("stage_layers"), nlohmann::json::parse("[4, 4, 4, 4]"));
  EXPECT_EQ(b.at("balanced").at("iteration_time_s").get<double>(),
            b.at("even").at("iteration_time_s").get<double>());
  EXPECT_FALSE(b.at("searched_dp_shares").get<bool>());
  std::filesystem::remove_all(out);
}

TEST(HeteroCli, UnevenSharesCountTheWholeGlobalBatchInTokensPerSecond) {
  const auto out = fresh_dir("hetero-shares");
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "--quiet", "--out", out.string(), "--set",
                          "plan.dp_micro_batches=[20,12]"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto s = summary_of(out);
  const int global = s.at("plan").at("global_batch_size");
  const int b = s.at("plan").at("micro_batch_size");
  EXPECT_EQ(s.at("plan").at("dp_micro_batches"), nlohmann::json::parse("[20, 12]"));
  EXPECT_EQ(20 + 12, global / b);
  const double tokens = double(global) * s.at("model").at("seq_len").get<int>();
  EXPECT_DOUBLE_EQ(s.at("tokens_per_iteration").get<double>(), tokens);
  EXPECT_NEAR(s.at("tokens_per_s").get<double>(), tokens / s.at("iteration_time_s").get<double>(),
              1e-9 * tokens);
  std::filesystem::remove_all(out);
}

TEST(HeteroCli, BadStageLayersAndSharesNameTheFileLineAndWhatWasExpected) {
  const auto scenario = write_temp_file("bad.yaml", R"(cluster: {gpu: A100-80GB, nodes: 1, gpus_per_node: 8}
model: {preset: gpt3-1.3b}
plan:
  dp: 2
  pp: 4
  global_batch_size: 16
  stage_layers: [6, 6, 6]
  dp_micro_batches: [10, 7]
)");
  auto r = run_cli({"run", scenario.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(
      r.err.find("bad.yaml:7:17: plan.stage_layers: [6, 6, 6] has 3 entries, but the pipeline has pp = 4 "
                 "stages"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("bad.yaml:8:21: plan.dp_micro_batches: [10, 7] adds up to 17 micro-batches"),
            std::string::npos)
      << r.err;

  r = run_cli({"run", scenario.string(), "--set", "plan.stage_layers=[6,6,6,7]", "--set",
               "plan.dp_micro_batches=[8,8]"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(
      r.err.find("--set plan.stage_layers=[6,6,6,7]: plan.stage_layers: [6, 6, 6, 7] adds up to 25 layers, "
                 "but model.layers = 24"),
      std::string::npos)
      << r.err;

  // A stage may hold no layer (it passes activations on; Megatron's layouts
  // allow it), a replica must run a micro-batch.
  r = run_cli({"run", scenario.string(), "--set", "plan.stage_layers=[12,0,6,6]", "--set",
               "plan.dp_micro_batches=[16,0]"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("plan.stage_layers"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plan.dp_micro_batches: [16, 0]: entry 1 (replica 1) is 0"), std::string::npos)
      << r.err;

  r = run_cli({"run", scenario.string(), "--balance", "auto", "--set", "plan.stage_layers=[9,5,5,5]", "--set",
               "plan.dp_micro_batches=[8,8]"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("plan.stage_layers: given with --balance auto"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::testing
