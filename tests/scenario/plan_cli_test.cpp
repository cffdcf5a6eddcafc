// `trainsim plan` end to end: the search with a small K finds the plan that
// simulating every feasible plan finds; plans that do not fit in memory are
// pruned, counted and never simulated; bad arguments are refused with a
// clear message and exit status 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& path) {
  return nlohmann::json::parse(read_file(path));
}

// GPT-3 1.3B on one DGX A100 (8 GPUs), global batch 16, in a space small
// enough to simulate every plan in a test: tp 1 or 2, any pp, micro-batch 1
// or 2, 1f1b or interleaved (v = 2), ZeRO 1, no recomputation.
std::vector<std::string> small_case(const fs::path& out, int top) {
  return {"plan",
          "--model",
          "gpt3-1.3b",
          "--cluster",
          "dgx-a100-hdr",
          "--gpus",
          "8",
          "--global-batch",
          "16",
          "--set",
          "plan.tp=[1,2]",
          "--set",
          "plan.zero_stage=1",
          "--set",
          "plan.recompute=none",
          "--set",
          "plan.sequence_parallel=false",
          "--set",
          "plan.micro_batch_size=[1,2]",
          "--set",
          "plan.schedule=[1f1b,interleaved_1f1b]",
          "--set",
          "plan.virtual_stages=2",
          "--top",
          std::to_string(top),
          "-j",
          "2",
          "--quiet",
          "--out",
          out.string()};
}

TEST(PlanCli, SmallTopKFindsTheWinnerOfAnExhaustiveSimulation) {
  const auto dir = fresh_dir("plan-exhaustive");
  const auto all = run_cli(small_case(dir / "all", 1000));
  ASSERT_EQ(all.status, 0) << all.err << all.out;
  const auto exhaustive = read_json(dir / "all" / "plans.json");
  const std::size_t feasible = exhaustive["feasible"];
  ASSERT_GE(feasible, 8u);
  ASSERT_EQ(exhaustive["ranking"].size(), feasible);  // every feasible plan simulated
  const std::string winner = exhaustive["ranking"][0];

  const auto few = run_cli(small_case(dir / "few", 3));
  ASSERT_EQ(few.status, 0) << few.err << few.out;
  const auto searched = read_json(dir / "few" / "plans.json");
  EXPECT_EQ(searched["ranking"].size(), 3u);
  EXPECT_EQ(searched["ranking"][0], winner) << few.out;
  EXPECT_NE(few.out.find("Winner: "), std::string::npos) << few.out;
  EXPECT_NE(few.out.find("It beats #2 ("), std::string::npos) << few.out;

  // The estimate is close enough to rank: within 25% of every simulation.
  for (const auto& row : exhaustive["plans"]) {
    ASSERT_EQ(row["status"], "simulated") << row.dump();
    const double estimate = row["estimate"]["iteration_time_s"];
    const double simulated = row["simulated"]["iteration_time_s"];
    EXPECT_NEAR(estimate / simulated, 1.0, 0.25) << row["key"];
  }
  fs::remove_all(dir);
}

// Llama-2 7B on 8 A100s at 4k tokens: many plans do not fit. They are
// counted, listed with the memory model's reason, and never simulated.
TEST(PlanCli, PlansThatDoNotFitArePrunedCountedAndNeverSimulated) {
  const auto dir = fresh_dir("plan-memory");
  const auto r = run_cli({"plan",
                          "--model",
                          "llama2-7b",
                          "--cluster",
                          "dgx-a100-hdr",
                          "--gpus",
                          "8",
                          "--global-batch",
                          "32",
                          "--set",
                          "plan.schedule=1f1b",
                          "--set",
                          "plan.recompute=[none,full]",
                          "--top",
                          "2",
                          "-j",
                          "2",
                          "--quiet",
                          "--format",
                          "csv",
                          "--out",
                          dir.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = read_json(dir / "plans.json");
  const std::size_t oom = plans["pruned"]["does_not_fit_in_memory"];
  EXPECT_GT(oom, 0u);
  EXPECT_EQ(plans["does_not_fit_in_memory"].size(), oom);
  std::size_t pruned = 0;
  for (const auto& [reason, count] : plans["pruned"].items())
    pruned += count.get<std::size_t>();
  EXPECT_EQ(plans["enumerated"].get<std::size_t>(), pruned + plans["feasible"].get<std::size_t>());
  // With --format csv the pruning goes to stderr and stdout holds the table.
  EXPECT_NE(r.err.find(std::to_string(oom) + " does not fit in GPU memory"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.rfind("rank,key,plan,estimate_rank,estimate_s,iteration_time_s,", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;

  std::set<std::string> simulated;
  for (const auto& entry : fs::directory_iterator(dir / "points"))
    simulated.insert(entry.path().filename().string());
  EXPECT_EQ(simulated.size(), 2u);
  for (const auto& p : plans["does_not_fit_in_memory"]) {
    EXPECT_EQ(simulated.count(p["key"].get<std::string>()), 0u) << p["key"];
    EXPECT_NE(p["reason"].get<std::string>().find("does not fit in GPU memory"), std::string::npos);
  }
  for (const auto& key : simulated) {
    const auto summary = read_json(dir / "points" / key / "summary.json");
    EXPECT_TRUE(summary["fits_in_memory"].get<bool>()) << key;
  }
  fs::remove_all(dir);
}

// One stage, one micro-batch of one sequence, no recomputation: the
// searches below vary only the ZeRO stage and the sharding. `args` are
// what they add (the base, the GPUs, their axes, the output folder).
CliResult one_stage_plan_search(std::vector<std::string> args) {
  args.insert(args.begin(), "plan");
  args.insert(args.end(), {"--set", "plan.tp=1", "--set", "plan.pp=1", "--set", "plan.micro_batch_size=1",
                           "--set", "plan.recompute=none", "--top", "2", "-j", "2", "--quiet"});
  return run_cli(args);
}

// A base scenario with hybrid sharding (plan.dp_shard) searches it on the
// FSDP plans only: their points run hybrid-sharded, and the other ZeRO
// stages' points carry no dp_shard (it is FSDP's), so each reruns as is.
TEST(PlanCli, HybridShardingOfTheBaseScenarioGoesToTheFsdpPlansOnly) {
  const auto dir = fresh_dir("plan-hybrid");
  const auto base =
      write_temp_file("plan-hybrid-base.yaml",
                      "name: base\ncluster: {preset: dgx-h100-ndr, nodes: 2}\nmodel: {preset: gpt3-1.3b}\n"
                      "plan: {global_batch_size: 16, dp_shard: 8}\n");
  const auto r = one_stage_plan_search({"--scenario", base.string(), "--gpus", "16", "--set",
                                        "plan.zero_stage=[1,3]", "--out", (dir / "out").string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  int points = 0;
  for (const auto& entry : fs::directory_iterator(dir / "out" / "points")) {
    const auto summary = read_json(entry.path() / "summary.json");
    const bool fsdp = summary["plan"]["zero_stage"].get<int>() == 3;
    EXPECT_EQ(summary["plan"].contains("dp_shard"), fsdp) << entry.path();
    if (fsdp) {
      EXPECT_EQ(summary["plan"]["dp_shard"].get<int>(), 8);
    }
    const auto rerun = run_cli(
        {"run", (entry.path() / "scenario.yaml").string(), "--quiet", "--out", (dir / "rerun").string()});
    EXPECT_EQ(rerun.status, 0) << rerun.err;
    ++points;
  }
  EXPECT_EQ(points, 2);
  fs::remove_all(dir);
}

// --set plan.overlap_grad_reduce=true (the Megatron runs' setting) goes to the
// plans it applies to: ZeRO 0-2 overlap their gradient reduction, the FSDP
// plans (which reduce-scatter per layer anyway, and for which the loader
// refuses the key) are searched and simulated without it, not pruned.
TEST(PlanCli, OverlapGradReduceOfTheBaseGoesToThePlansItAppliesTo) {
  const auto dir = fresh_dir("plan-overlap-grad");
  const auto r = one_stage_plan_search({"--model", "gpt3-1.3b", "--cluster", "dgx-h100-ndr", "--gpus", "16",
                                        "--global-batch", "16", "--set", "plan.zero_stage=[1,3]", "--set",
                                        "plan.overlap_grad_reduce=true", "--out", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = read_json(dir / "plans.json");
  EXPECT_EQ(plans["feasible"].get<int>(), 2) << plans["pruned"];
  for (const char* key : {"tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z1", "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z3"}) {
    const auto summary = read_json(dir / "points" / key / "summary.json");
    EXPECT_EQ(summary["plan"]["overlap_grad_reduce"].get<bool>(), std::string(key).ends_with("z1")) << key;
    const auto rerun = run_cli({"run", (dir / "points" / key / "scenario.yaml").string(), "--quiet", "--out",
                                (dir / "rerun").string()});
    EXPECT_EQ(rerun.status, 0) << key << rerun.err;
  }
  fs::remove_all(dir);
}

// --fidelity (fast by default) sets the simulations' collectives fidelity
// unless the user gives one: another collectives key (the NCCL interference
// of the validated runs) must not turn it off.
TEST(PlanCli, ACollectivesKeyOtherThanTheFidelityKeepsTheSearchFidelity) {
  const auto dir = fresh_dir("plan-fidelity");
  const auto r = one_stage_plan_search(
      {"--model", "gpt3-1.3b", "--cluster", "dgx-h100-ndr", "--gpus", "16", "--global-batch", "16", "--set",
       "plan.zero_stage=1", "--set", "cluster.collectives.compute_interference=0.16", "--out", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto scenario = read_file(dir / "points" / "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z1" / "scenario.yaml");
  EXPECT_NE(scenario.find("fidelity: fast"), std::string::npos) << scenario;
  EXPECT_NE(scenario.find("compute_interference: 0.16"), std::string::npos) << scenario;
  fs::remove_all(dir);
  // --fidelity cluster leaves the cluster's own (auto).
  const auto own = one_stage_plan_search({"--model", "gpt3-1.3b", "--cluster", "dgx-h100-ndr", "--gpus", "16",
                                          "--global-batch", "16", "--set", "plan.zero_stage=1", "--fidelity",
                                          "cluster", "--out", dir.string()});
  ASSERT_EQ(own.status, 0) << own.err << own.out;
  EXPECT_EQ(
      read_file(dir / "points" / "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z1" / "scenario.yaml").find("fidelity"),
      std::string::npos);
  fs::remove_all(dir);
}

// A plan whose pp does not divide the layers runs Megatron's split (the
// embedding and the loss counted as layers); its point's scenario carries
// that split, so it loads and simulates like the others (it failed with "not
// divisible by pp" when the split stayed in the search).
TEST(PlanCli, AnUnevenSplitOfTheLayersReachesThePointsScenario) {
  const auto dir = fresh_dir("plan-uneven");
  const auto r = run_cli({"plan",
                          "--model",
                          "gpt3-1.3b",
                          "--cluster",
                          "dgx-a100-hdr",
                          "--gpus",
                          "8",
                          "--global-batch",
                          "16",
                          "--set",
                          "model.layers=22",
                          "--set",
                          "plan.pp=8",
                          "--set",
                          "plan.tp=1",
                          "--set",
                          "plan.zero_stage=1",
                          "--set",
                          "plan.recompute=none",
                          "--set",
                          "plan.micro_batch_size=1",
                          "--set",
                          "plan.schedule=1f1b",
                          "--top",
                          "1",
                          "--quiet",
                          "--out",
                          dir.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = read_json(dir / "plans.json");
  ASSERT_EQ(plans["ranking"].size(), 1u) << r.out;
  const std::string key = plans["ranking"][0];
  EXPECT_EQ(key, "tp1-pp8-dp1-cp1-v1-mb1-1f1b-none-z1-l2_3..2");
  const auto scenario = read_file(dir / "points" / key / "scenario.yaml");
  EXPECT_NE(scenario.find("stage_layers: [2, 3, 3, 3, 3, 3, 3, 2]"), std::string::npos) << scenario;
  EXPECT_EQ(r.out.find("failed"), std::string::npos) << r.out;
  EXPECT_EQ(plans["plans"][0]["plan"]["stage_layers"], (std::vector<int>{2, 3, 3, 3, 3, 3, 3, 2}));
  fs::remove_all(dir);
}

// --set plan.dp_shard=[0,8] searches full and hybrid sharding side by side
// (0: full); each simulated point runs what its key says, and the winner's
// explanation names the sharding when that is what differs.
TEST(PlanCli, DpShardIsASearchedAxisOfTheFsdpPlans) {
  const auto dir = fresh_dir("plan-shard-axis");
  const auto r = one_stage_plan_search({"--model", "gpt3-1.3b", "--cluster", "dgx-h100-ndr", "--gpus", "16",
                                        "--global-batch", "16", "--set", "plan.zero_stage=3", "--set",
                                        "plan.dp_shard=[0,8]", "--out", dir.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto plans = read_json(dir / "plans.json");
  EXPECT_EQ(plans["feasible"].get<int>(), 2);
  for (const char* key :
       {"tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z3", "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z3-s8"}) {
    const auto summary = read_json(dir / "points" / key / "summary.json");
    const bool hybrid = std::string(key).ends_with("-s8");
    EXPECT_EQ(summary["plan"].contains("dp_shard"), hybrid) << key;
  }
  EXPECT_NE(r.out.find("zero3 shard8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the plans differ in dp_shard"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// A plan the search keeps only with an uneven split (6 layers on 4 stages:
// Megatron's embedding and loss counted as layers, 1|2|2|1) runs with that
// split: its point's scenario carries plan.stage_layers, so the simulation
// is not refused (pp does not divide the layers).
TEST(PlanCli, PlansWithAnUnevenSplitRunWithIt) {
  const auto dir = fresh_dir("plan-uneven");
  const auto r = run_cli({"plan",
                          "--model",
                          "gpt3-1.3b",
                          "--cluster",
                          "dgx-a100-hdr",
                          "--gpus",
                          "8",
                          "--global-batch",
                          "16",
                          "--set",
                          "model.layers=6",
                          "--set",
                          "plan.tp=2",
                          "--set",
                          "plan.pp=4",
                          "--set",
                          "plan.schedule=1f1b",
                          "--set",
                          "plan.micro_batch_size=1",
                          "--set",
                          "plan.recompute=none",
                          "--set",
                          "plan.zero_stage=1",
                          "--top",
                          "1",
                          "-j",
                          "1",
                          "--quiet",
                          "--out",
                          dir.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  int points = 0;
  for (const auto& entry : fs::directory_iterator(dir / "points")) {
    const auto summary = read_json(entry.path() / "summary.json");
    ASSERT_TRUE(summary["plan"].contains("stage_layers")) << summary["plan"].dump();
    EXPECT_EQ(summary["plan"]["stage_layers"], nlohmann::json::parse("[1,2,2,1]")) << entry.path();
    ++points;
  }
  EXPECT_EQ(points, 1);
  fs::remove_all(dir);
}

void expect_refused(const std::vector<std::string>& args, const std::string& message) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
}

TEST(PlanCli, RefusesBadArgumentsWithClearMessages) {
  const std::vector<std::string> base = {"plan",           "--cluster", "dgx-a100-hdr", "--gpus", "8",
                                         "--global-batch", "16"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_refused(with({"--model", "gpt3-1.4b"}), "--model gpt3-1.4b: neither a model preset");
  expect_refused(
      {"plan", "--model", "gpt3-1.3b", "--cluster", "dgx-z100", "--gpus", "8", "--global-batch", "16"},
      "--cluster dgx-z100: neither a cluster preset");
  expect_refused(
      {"plan", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-hdr", "--gpus", "12", "--global-batch", "16"},
      "--gpus 12: the cluster dgx-a100-hdr has 8 GPUs per node; expected a multiple of 8");
  expect_refused(with({"--model", "gpt3-1.3b", "--set", "plan.dp=2"}), "--set plan.dp=2: dp is derived");
  expect_refused(with({"--model", "gpt3-1.3b", "--set", "plan.schedule=fast"}),
                 "--set plan.schedule=fast: 'fast' is not one of");
  expect_refused(with({"--model", "gpt3-1.3b", "--set", "model.hiden=4096"}), "model.hiden");
  expect_refused({"plan", "--model", "gpt3-1.3b", "--cluster", "dgx-a100-hdr", "--gpus", "8"},
                 "no global batch: give --global-batch B");
  expect_refused(with({}), "no model: give --model");
  expect_refused(with({"--model", "gpt3-1.3b", "--set", "plan.tp=3"}), "no plan of gpt3-1.3b on 8 GPUs");
}

}  // namespace
}  // namespace trainsim::testing

namespace trainsim::testing {
namespace {

// The replay's verdict on memory reaches the ranking: the search's winner,
// its summary.json then saying that its replayed peak (85 GiB) exceeds the
// A100's 80 GiB (as a replay whose peak outgrew the static estimate would),
// is reused on the rerun and no longer crowned; the next plan wins.
TEST(PlanCli, APlanWhoseReplayedMemoryDoesNotFitIsMarkedAndTheBestPlanThatFitsWins) {
  const auto dir = fresh_dir("plan-replayed-oom");
  const auto first = run_cli(small_case(dir / "o", 2));
  ASSERT_EQ(first.status, 0) << first.err << first.out;
  const auto before = read_json(dir / "o" / "plans.json");
  ASSERT_EQ(before["ranking"].size(), 2u);
  const std::string crowned = before["ranking"][0], runner_up = before["ranking"][1];
  const fs::path summary = dir / "o" / "points" / crowned / "summary.json";
  auto s = nlohmann::ordered_json::parse(read_file(summary));
  s["fits_in_memory"] = false;
  s["peak_memory_bytes"] = 85.0 * 1024 * 1024 * 1024;
  std::ofstream(summary) << s.dump(2);

  const auto again = run_cli(small_case(dir / "o", 2));
  ASSERT_EQ(again.status, 0) << again.err << again.out;
  const auto after = read_json(dir / "o" / "plans.json");
  EXPECT_EQ(after["ranking"][0], runner_up);
  EXPECT_EQ(after["ranking"][1], crowned);
  bool marked = false;
  for (const auto& row : after["plans"])
    if (row["key"] == crowned) {
      marked = true;
      EXPECT_EQ(row["fits_in_memory"], false) << row.dump();
      EXPECT_EQ(row["memory_capacity_bytes"], 85899345920) << row.dump();  // the A100's 80 GiB
    }
  EXPECT_TRUE(marked);
  EXPECT_NE(again.out.find("does not fit: replayed peak 85GiB > 80GiB of HBM"), std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("Not crowned: "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find((fs::path("points") / runner_up / "scenario.yaml").string()), std::string::npos)
      << again.out;
  EXPECT_NE(read_file(dir / "o" / "plans.csv").find(",does_not_fit_in_memory,2,"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::testing
