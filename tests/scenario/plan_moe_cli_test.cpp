// `trainsim plan` on a MoE model: expert parallelism is searched over the
// degrees the loader accepts (and no other), the best plan loads and
// simulates, the base scenario's MoE options reach the plans they apply
// to, and a dense model refuses an expert-parallel axis.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

// Mixtral 8x7B shrunk to 2 layers (8 experts, top-2) on two DGX H100s, one
// stage, 1F1B, micro-batch 1, no recomputation: tp, ZeRO 0 / 1, sequence
// parallelism and ep searched.
std::vector<std::string> small_moe_search(const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args{"plan",
                                "--model",
                                "mixtral-8x7b",
                                "--cluster",
                                "dgx-h100-ndr",
                                "--gpus",
                                "16",
                                "--global-batch",
                                "32",
                                "--set",
                                "model.layers=2",
                                "--set",
                                "plan.pp=1",
                                "--set",
                                "plan.zero_stage=[0,1]",
                                "--set",
                                "plan.recompute=none",
                                "--set",
                                "plan.micro_batch_size=1",
                                "-j",
                                "1",
                                "--quiet",
                                "--out",
                                out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(PlanMoeCli, SearchesTheValidExpertParallelDegreesAndTheBestPlanSimulates) {
  const auto dir = fresh_dir("plan-moe");
  const auto r = run_cli(small_moe_search(dir / "search", {"--set", "plan.tp=[1,2]", "--top", "1"}));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = nlohmann::json::parse(read_file(dir / "search" / "plans.json"));
  // (tp, sequence parallel) -> the ep values of the feasible plans.
  std::map<std::pair<int, bool>, std::set<int>> ep_of;
  for (const auto& row : plans["plans"]) {
    const auto& p = row["plan"];
    ep_of[{p["tp"].get<int>(), p["sequence_parallel"].get<bool>()}].insert(p["expert_parallel"].get<int>());
    EXPECT_EQ(row.contains("estimate") && row["estimate"].contains("ep_comm_s"), true);
  }
  // ep divides the 8 experts and dp (16, 8); tp 2 needs sequence
  // parallelism for ep > 1; 16 divides no expert count here.
  EXPECT_EQ((ep_of[{1, false}]), (std::set<int>{1, 2, 4, 8}));
  EXPECT_EQ((ep_of[{2, true}]), (std::set<int>{1, 2, 4, 8}));
  EXPECT_EQ((ep_of[{2, false}]), (std::set<int>{1}));
  // Every plan of the space loaded: nothing pruned as invalid.
  ASSERT_TRUE(plans["pruned"].contains("invalid_plan")) << plans["pruned"].dump();
  EXPECT_EQ(plans["pruned"]["invalid_plan"].get<int>(), 0) << plans["pruned"].dump();
  // tp 2 with sequence parallelism also runs expert TP 1, whose ep divides
  // tp x dp = 16 (and the experts): 1, 2, 4, 8 more per ZeRO stage.
  EXPECT_EQ(plans["feasible"].get<int>(), 2 * (4 + 4 + 1 + 4));

  // The estimate ranks the MoE plans close to their simulation (one node:
  // the all-to-alls on NVLink).
  for (const auto& row : plans["plans"])
    if (row["status"] == "simulated") {
      const double estimate = row["estimate"]["iteration_time_s"];
      const double simulated = row["simulated"]["iteration_time_s"];
      EXPECT_NEAR(estimate, simulated, 0.10 * simulated) << row.dump();
    }
  // The best plan simulated, and its scenario runs alone.
  ASSERT_EQ(plans["ranking"].size(), 1u);
  const std::string winner = plans["ranking"][0];
  const auto scenario = dir / "search" / "points" / winner / "scenario.yaml";
  ASSERT_TRUE(fs::exists(scenario)) << r.out;
  const auto run = run_cli({"run", scenario.string(), "--quiet"});
  EXPECT_EQ(run.status, 0) << run.err;
  const std::string csv = read_file(dir / "search" / "plans.csv");
  EXPECT_NE(csv.find(",expert_parallel,"), std::string::npos);
  EXPECT_NE(csv.find(",estimate_ep_comm_s,"), std::string::npos);
}

// moe_a2a_overlap and the dispatcher of the base go to every plan with ep >
// 1 (delay_wgrad_compute with the overlap: the ep 1 plan drops both rather
// than being refused); a fixed ep list keeps only the degrees a plan can take (3 divides no
// expert count) and shows in the table's plan label.
TEST(PlanMoeCli, BaseMoeOptionsReachTheExpertParallelPlans) {
  const auto dir = fresh_dir("plan-moe-base");
  const auto r = run_cli(small_moe_search(
      dir / "search",
      {"--set", "plan.tp=1", "--set", "plan.zero_stage=1", "--set", "plan.expert_parallel=[1,3,4]", "--set",
       "plan.moe_a2a_overlap=true", "--set", "plan.delay_wgrad_compute=true", "--top", "2"}));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = nlohmann::json::parse(read_file(dir / "search" / "plans.json"));
  ASSERT_EQ(plans["feasible"].get<int>(), 2);
  EXPECT_NE(r.out.find("tp1 pp1 dp16 ep4 mb1 1f1b zero1"), std::string::npos) << r.out;
  const std::string ep4 =
      read_file(dir / "search" / "points" / "tp1-pp1-dp16-ep4-cp1-v1-mb1-1f1b-none-z1" / "scenario.yaml");
  EXPECT_NE(ep4.find("expert_parallel: 4"), std::string::npos) << ep4;
  EXPECT_NE(ep4.find("moe_a2a_overlap: true"), std::string::npos) << ep4;
  EXPECT_NE(ep4.find("delay_wgrad_compute: true"), std::string::npos) << ep4;
  const std::string ep1 =
      read_file(dir / "search" / "points" / "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z1" / "scenario.yaml");
  EXPECT_NE(ep1.find("moe_a2a_overlap: false"), std::string::npos) << ep1;
  EXPECT_NE(ep1.find("delay_wgrad_compute: false"), std::string::npos) << ep1;
}

// --top 0: the estimate's ranking alone, every plan "estimated", nothing
// simulated, the best by estimate printed with its expert all-to-all term.
TEST(PlanMoeCli, TopZeroRanksByEstimateWithoutSimulating) {
  const auto dir = fresh_dir("plan-moe-top0");
  const auto r = run_cli(small_moe_search(dir / "search", {"--set", "plan.tp=1", "--top", "0"}));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("no plan simulated (--top 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ep a2a"), std::string::npos) << r.out;
  const auto plans = nlohmann::json::parse(read_file(dir / "search" / "plans.json"));
  EXPECT_EQ(plans["feasible"].get<int>(), 4 + 4);
  EXPECT_TRUE(plans["ranking"].empty());
  for (const auto& row : plans["plans"])
    EXPECT_EQ(row["status"], "estimated") << row.dump();
  EXPECT_FALSE(fs::exists(dir / "search" / "points" / plans["plans"][0]["key"].get<std::string>()));
}

// tp 4 x dp 4, ep 4: expert TP 4 (the key left out), 2 and 1 are the
// searched layouts; every one simulates, the estimate stays near the
// replay, and the etp 2 plan's scenario carries the key and runs alone.
TEST(PlanMoeCli, ExpertTpIsSearchedAndAPlanBelowTpIsWrittenWithItsKeyAndReplays) {
  const auto dir = fresh_dir("plan-moe-etp");
  const auto r = run_cli(small_moe_search(
      dir / "search", {"--set", "plan.tp=4", "--set", "plan.zero_stage=1", "--set",
                       "plan.sequence_parallel=true", "--set", "plan.expert_parallel=4", "--top", "3"}));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = nlohmann::json::parse(read_file(dir / "search" / "plans.json"));
  std::set<int> etp;
  for (const auto& row : plans["plans"]) {
    const auto& p = row["plan"];
    etp.insert(p.contains("expert_tensor_parallel") ? p["expert_tensor_parallel"].get<int>()
                                                    : p["tp"].get<int>());
    ASSERT_EQ(row["status"], "simulated") << row.dump();
    const double estimate = row["estimate"]["iteration_time_s"];
    const double simulated = row["simulated"]["iteration_time_s"];
    EXPECT_NEAR(estimate, simulated, 0.15 * simulated) << row.dump();
  }
  EXPECT_EQ(etp, (std::set<int>{1, 2, 4}));
  const std::string key = "tp4-pp1-dp4-ep4-etp2-cp1-v1-mb1-1f1b-none-z1-sp";
  const auto scenario = dir / "search" / "points" / key / "scenario.yaml";
  ASSERT_TRUE(fs::exists(scenario)) << r.out;
  EXPECT_NE(read_file(scenario).find("expert_tensor_parallel: 2"), std::string::npos);
  const auto run = run_cli({"run", scenario.string(), "--out", (dir / "alone").string(), "--quiet"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto summary = nlohmann::json::parse(read_file(dir / "alone" / "summary.json"));
  EXPECT_EQ(summary["plan"]["expert_tensor_parallel"], 2);
  // The tp 4 plan (expert TP left out) writes no key.
  const auto plain =
      dir / "search" / "points" / "tp4-pp1-dp4-ep4-cp1-v1-mb1-1f1b-none-z1-sp" / "scenario.yaml";
  ASSERT_TRUE(fs::exists(plain));
  EXPECT_EQ(read_file(plain).find("expert_tensor_parallel"), std::string::npos);
}

TEST(PlanMoeCli, ADenseModelRefusesAnExpertParallelAxis) {
  const auto dir = fresh_dir("plan-moe-dense");
  const auto r =
      run_cli({"plan", "--model", "gpt3-125m", "--cluster", "dgx-h100-ndr", "--gpus", "8", "--global-batch",
               "8", "--set", "plan.expert_parallel=[1,2]", "--quiet", "--out", (dir / "out").string()});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.err.find("plan.expert_parallel"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dense model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::testing
