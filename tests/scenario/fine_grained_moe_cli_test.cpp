// Fine-grained MoE through the real CLI (issue 33): multi-head latent
// attention and multi-token prediction run end to end and are reported in
// summary.json; bad combinations exit 1 with one error naming file, line
// and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "support/run_summary.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// DeepSeek-V2-Lite's MLA and experts, 4 layers, on one 8-GPU node: pp 2,
// dp 4, ep 4, one MTP module.
const std::string kMla = R"(cluster:
  gpu: H100-SXM
  nodes: 1
  gpus_per_node: 8
model:
  preset: deepseek-v2-lite
  layers: 4
  seq_len: 1024
  mtp_depth: 1
plan:
  pp: 2
  dp: 4
  expert_parallel: 4
  micro_batch_size: 1
  global_batch_size: 16
)";

TEST(FineGrainedMoeCli, MlaModelWithMtpRunsAndReportsItsShape) {
  const auto out = fresh_dir("mla-mtp");
  const auto r = run_text(kMla, out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(read_file(out / "summary.json"));
  const auto& model = summary["model"];
  EXPECT_EQ(model["attention"], "mla");
  EXPECT_EQ(model["mla"]["q_lora_rank"], 0);
  EXPECT_EQ(model["mla"]["kv_lora_rank"], 512);
  EXPECT_EQ(model["mtp_depth"], 1);
  EXPECT_GT(model["mtp_parameters"].get<double>(), 0.5e9);
  // The last stage runs the MTP module's MoE layer and output head besides
  // its two MoE layers: it computes more than the first (the embedding, a
  // dense and a MoE layer).
  const auto& stages = summary["stages"];
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_GT(stages[1]["compute_fraction"].get<double>(), stages[0]["compute_fraction"].get<double>());
  fs::remove_all(out);
}

// Megatron's recompute modules and the overlapped gradient reduction with
// EP, end to end: mla_up_proj and moe_act keep less than the attention core
// alone (Q, K, V and the experts' activation outputs), at every GPU's peak.
TEST(FineGrainedMoeCli, RecomputeModulesAndOverlappedReductionRunWithExpertParallelism) {
  const std::string base = with(kMla, "  global_batch_size: 16\n",
                                "  global_batch_size: 16\n  recompute: selective\n  zero_stage: 1\n");
  const auto out = fresh_dir("mla-modules");
  const auto r = run_text(
      with(base, "  zero_stage: 1\n",
           "  zero_stage: 1\n  recompute_modules: mla_up_proj moe_act\n  overlap_grad_reduce: true\n"),
      out);
  ASSERT_EQ(r.status, 0) << r.err;
  const json modules = json::parse(read_file(out / "summary.json"));
  const auto core_out = fresh_dir("mla-core");
  ASSERT_EQ(run_text(base, core_out).status, 0);
  const json core = json::parse(read_file(core_out / "summary.json"));
  // summary.json names the modules only when the plan does.
  EXPECT_EQ(modules["plan"]["recompute_modules"], json::array({"mla_up_proj", "moe_act"}));
  EXPECT_FALSE(core["plan"].contains("recompute_modules"));
  ASSERT_EQ(modules["gpus"].size(), core["gpus"].size());
  for (std::size_t g = 0; g < core["gpus"].size(); ++g)
    EXPECT_LT(modules["gpus"][g]["peak_memory_bytes"].get<double>(),
              core["gpus"][g]["peak_memory_bytes"].get<double>())
        << g;
  fs::remove_all(out);
  fs::remove_all(core_out);
}

TEST(FineGrainedMoeCli, MlaKeyOnAMultiHeadModelIsOneErrorAtItsLine) {
  expect_one_error(
      run_text(with(kMla, "  mtp_depth: 1\n", "  mtp_depth: 1\n  attention: mha\n  v_head_dim: 64\n")),
      "11:", "model.v_head_dim", "attention: mla");
}

TEST(FineGrainedMoeCli, MlaWithATensorParallelDegreeThatDoesNotDivideTheHeadsIsRefused) {
  // 16 heads over tp 3 (pp 2 x tp 3 on a 6-GPU node).
  const std::string yaml =
      with(with(with(kMla, "  dp: 4\n", "  dp: 1\n  tp: 3\n"), "gpus_per_node: 8", "gpus_per_node: 6"),
           "  expert_parallel: 4\n", "");
  expect_one_error(run_text(yaml), "13:", "plan.tp", "latent attention");
}

// 8 experts top-2 on ep 8 (one expert per GPU), 4 MoE layers.
const std::string kSkewed = R"(seed: 3
cluster:
  gpu: H100-SXM
  nodes: 1
  gpus_per_node: 8
model:
  layers: 4
  hidden: 2048
  heads: 16
  seq_len: 2048
  vocab: 8000
  mlp: swiglu
  flash_attention: true
  moe:
    experts: 8
    top_k: 2
    expert_ffn_hidden: 4096
    routing: zipf
    routing_skew: 1.0
plan:
  dp: 8
  expert_parallel: 8
  micro_batch_size: 1
  global_batch_size: 16
)";

TEST(FineGrainedMoeCli, SkewedRoutingIsBlamedOnExpertImbalanceInTheSummaryAndTheTerminal) {
  const auto out = fresh_dir("moe-skewed");
  const auto r = run_cli({"run", write_temp_file("skewed.yaml", kSkewed).string(), "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json summary = json::parse(read_file(out / "summary.json"));
  const auto& routing = summary["model"]["moe"]["routing"];
  EXPECT_EQ(routing["kind"], "zipf");
  EXPECT_EQ(routing["seed"], 3);
  // Zipf s = 1 over 8 experts: the busiest takes 1 / H_8 = 0.368 of the
  // copies, 2.94 times its balanced eighth.
  EXPECT_NEAR(routing["busiest_rank_factor"].get<double>(), 8 / 2.717857142857143, 1e-9);
  const auto& lost = summary["lost_time"];
  const double imbalance = lost["by_cause"]["expert_imbalance"]["fraction_of_gpu_time"].get<double>();
  EXPECT_GT(imbalance, 0.2);
  EXPECT_EQ(lost["top_causes"][0]["cause"], "expert_imbalance");
  EXPECT_LT(lost["balanced_routing_iteration_time_s"].get<double>(),
            summary["iteration_time_s"].get<double>());
  bool on_path = false;
  for (const auto& b : summary["critical_path"]["by_kind"])
    on_path = on_path || (b["name"] == "expert imbalance" && b["fraction"].get<double>() > 0.2);
  EXPECT_TRUE(on_path);
  EXPECT_NE(r.out.find("moe routing  zipf (s 1, seed 3), dropless: busiest EP rank 2.94x"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("waiting for the busiest expert GPU (expert imbalance)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with balanced experts"), std::string::npos) << r.out;
  fs::remove_all(out);
}

TEST(FineGrainedMoeCli, TheSameSeedGivesTheSameOutputsAnotherSeedOtherHotExperts) {
  const auto path = write_temp_file("skewed.yaml", kSkewed).string();
  const auto a = fresh_dir("moe-seed-a"), b = fresh_dir("moe-seed-b"), c = fresh_dir("moe-seed-c");
  ASSERT_EQ(run_cli({"run", path, "-q", "--out", a.string()}).status, 0);
  ASSERT_EQ(run_cli({"run", path, "-q", "--out", b.string()}).status, 0);
  ASSERT_EQ(run_cli({"run", path, "-q", "--out", c.string(), "--set", "model.moe.routing_seed=4"}).status, 0);
  EXPECT_EQ(read_file(a / "summary.json"), read_file(b / "summary.json"));
  EXPECT_EQ(read_file(a / "trace.json"), read_file(b / "trace.json"));
  // Another seed lays the hot experts on other GPUs (one expert per GPU:
  // the busiest load, and so the iteration time, is the same).
  EXPECT_NE(read_file(a / "per_gpu.csv"), read_file(c / "per_gpu.csv"));
  for (const auto& d : {a, b, c})
    fs::remove_all(d);
}

TEST(FineGrainedMoeCli, RoutingSkewWithoutADrawnRoutingIsOneError) {
  expect_one_error(run_text(with(kSkewed, "    routing: zipf\n", "    routing: balanced\n")),
                   "19:", "model.moe.routing_skew", "applies to routing: zipf or dirichlet");
}

TEST(FineGrainedMoeCli, SeedsDrawOtherLoadsWhenRoutingFollowsTheScenariosSeed) {
  // Dirichlet(1) over 8 experts on 8 GPUs: each seed puts other loads on
  // the GPUs, and the busiest GPU's load (so the iteration) moves with it.
  const std::string yaml =
      with(with(kSkewed, "routing: zipf", "routing: dirichlet"), "seed: 3\n", "seed: 3\n");
  const auto out = fresh_dir("moe-seeds");
  const auto r = run_cli(
      {"run", write_temp_file("seeds.yaml", yaml).string(), "-q", "--out", out.string(), "--seeds", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json seeds = json::parse(read_file(out / "summary.json"))["seeds"];
  EXPECT_TRUE(seeds["iteration_depends_on_seed"].get<bool>());
  ASSERT_EQ(seeds["runs"].size(), 3u);
  std::set<double> times;
  for (const auto& run : seeds["runs"])
    times.insert(run["mean_iteration_time_s"].get<double>());
  EXPECT_EQ(times.size(), 3u);
  // An explicit routing_seed pins the loads: every seed replays the same graph.
  const auto pinned = fresh_dir("moe-seeds-pinned");
  ASSERT_EQ(run_cli({"run",
                     write_temp_file("pinned.yaml", with(yaml, "    routing_skew: 1.0\n",
                                                         "    routing_skew: 1.0\n    routing_seed: 11\n"))
                         .string(),
                     "-q", "--out", pinned.string(), "--seeds", "2"})
                .status,
            0);
  const json fixed = json::parse(read_file(pinned / "summary.json"))["seeds"];
  EXPECT_FALSE(fixed["iteration_depends_on_seed"].get<bool>());
  EXPECT_EQ(fixed["runs"][0]["mean_iteration_time_s"], fixed["runs"][1]["mean_iteration_time_s"]);
  fs::remove_all(out);
  fs::remove_all(pinned);
}

}  // namespace
}  // namespace trainsim::testing
