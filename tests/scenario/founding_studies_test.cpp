// The founding studies (scenarios/study-hardware-scaling.yaml,
// scenarios/study-bpipe.yaml, scenarios/study-hardware-generations.yaml), each run through `trainsim sweep`
// as shipped, narrowed with --only and shrunk with --set to a few seconds, and held to the qualitative
// conclusion docs/founding_studies.md draws from the full runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The study's rows by a key built from their parameters.
std::map<std::string, json> rows_by(const json& results, const std::vector<std::string>& columns) {
  std::map<std::string, json> out;
  for (const auto& row : results["rows"]) {
    std::string key;
    for (const auto& c : columns) {
      // append() only: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
      if (!key.empty())
        key.append(" ");
      key.append(row[c].is_string() ? row[c].get<std::string>() : row[c].dump());
    }
    out[key] = row;
  }
  return out;
}

std::string key_of(std::initializer_list<std::string> parts) {
  std::string key;
  for (const auto& p : parts) {
    if (!key.empty())
      key.append(" ");
    key.append(p);
  }
  return key;
}

double figure(const json& row, const std::string& name) {
  EXPECT_EQ(row["status"], "ok") << row.dump();
  return row.contains(name) && row[name].is_number() ? row[name].get<double>() : -1;
}

// Llama-2 7B (4 of its 32 layers), 64 sequences of 4,096 tokens, pure FSDP
// and FSDP + TP 2, on 8 and 64 GPUs of each GPU generation.
TEST(FoundingStudies, HardwareScalingPerGpuThroughputFallsAndH100RunsAtLowerMfu) {
  const auto dir = fresh_dir("study-hw");
  const auto r = run_cli({"sweep", "scenarios/study-hardware-scaling.yaml", "--out", dir.string(), "-j", "2",
                          "--quiet", "--keep", "summary", "--only", "model.preset=llama2-7b", "--only",
                          "variant=fsdp,fsdp-tp2", "--only", "cluster.nodes=1,8", "--set", "model.layers=4",
                          "--set", "plan.global_batch_size=64"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto results = json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(results["rows"].size(), 8u);
  auto rows = rows_by(results, {"variant", "cluster.preset", "cluster.nodes"});
  for (const std::string gpu : {"dgx-a100-hdr", "dgx-h100-ndr"}) {
    const auto& small = rows[key_of({"fsdp", gpu, "1"})];
    const auto& large = rows[key_of({"fsdp", gpu, "8"})];
    // Strong scaling: each GPU does less per second at 64 GPUs than at 8 ...
    EXPECT_LT(figure(large, "tokens_per_s_per_gpu"), figure(small, "tokens_per_s_per_gpu")) << gpu;
    // ... though the cluster as a whole is faster.
    EXPECT_GT(figure(large, "tokens_per_s"), 4 * figure(small, "tokens_per_s")) << gpu;
    // because FSDP's gathers and reduce-scatters are exposed more.
    const std::string gather = "utilization.exposed_comm_by_op_fraction.dp_all_gather";
    const std::string scatter = "utilization.exposed_comm_by_op_fraction.dp_reduce_scatter";
    EXPECT_GT(figure(large, gather) + figure(large, scatter), figure(small, gather) + figure(small, scatter))
        << gpu;
    // Power follows compute: a GPU waiting on the network draws less; so do
    // the tokens per joule.
    EXPECT_LE(figure(large, "energy.average_power_per_gpu_W"),
              figure(small, "energy.average_power_per_gpu_W"));
    EXPECT_LT(figure(large, "energy.tokens_per_J"), figure(small, "energy.tokens_per_J")) << gpu;
  }
  // H100 is faster but used less efficiently than A100 on the same work.
  for (const std::string key : {"fsdp", "fsdp-tp2"})
    for (const std::string nodes : {"1", "8"}) {
      const auto& a100 = rows[key_of({key, "dgx-a100-hdr", nodes})];
      const auto& h100 = rows[key_of({key, "dgx-h100-ndr", nodes})];
      EXPECT_GT(figure(h100, "tokens_per_s"), figure(a100, "tokens_per_s")) << key << nodes;
      EXPECT_LT(figure(h100, "mfu"), figure(a100, "mfu")) << key << nodes;
    }
  EXPECT_TRUE(fs::exists(dir / "plots" / "7b-a100-tokens-per-gpu.svg"));
  fs::remove_all(dir);
}

// GPT-3 96B (the study's shape, all 80 layers) with 16 micro-batches per
// pipeline, micro-batch 1, no or full recomputation, evictor/acceptor pairs
// at NVLink speed.
TEST(FoundingStudies, BPipeBeatsOneFOneBOnGptWithoutFlashAttentionAndTheGapShrinksWithIt) {
  const auto dir = fresh_dir("study-bpipe");
  const auto r = run_cli({"sweep", "scenarios/study-bpipe.yaml", "--out", dir.string(), "-j", "2", "--quiet",
                          "--keep", "summary", "--only", "variant=gpt3-96b", "--only",
                          "cluster.nic.bandwidth=2400Gbps", "--only", "plan.recompute=none,full", "--only",
                          "plan.micro_batch_size=1", "--set", "plan.global_batch_size=32"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto results = json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(results["rows"].size(), 8u);
  auto rows = rows_by(results, {"model.flash_attention", "plan.schedule", "plan.recompute"});
  // Without FlashAttention 1F1B cannot keep every activation on stage 0 ...
  EXPECT_EQ(rows["false 1f1b none"]["status"], "dropped");
  EXPECT_NE(rows["false 1f1b none"]["reason"].get<std::string>().find("does_not_fit_in_memory"),
            std::string::npos);
  // ... BPipe can, by moving some to the last stage, and so it skips the
  // recomputation 1F1B needs: faster.
  const double bpipe_noflash = figure(rows["false bpipe none"], "iteration_time_s");
  const double onefoneb_noflash = figure(rows["false 1f1b full"], "iteration_time_s");
  EXPECT_LT(bpipe_noflash * 1.15, onefoneb_noflash);
  EXPECT_GT(figure(rows["false bpipe none"], "utilization.exposed_comm_by_op_fraction.pp_evict"), -1);
  // With FlashAttention 1F1B fits without recomputation too: BPipe has
  // nothing left to buy and only adds its transfers.
  ASSERT_EQ(rows["true 1f1b none"]["status"], "ok");
  const double gain_noflash = onefoneb_noflash / bpipe_noflash;
  const double gain_flash = figure(rows["true 1f1b none"], "iteration_time_s") /
                            figure(rows["true bpipe none"], "iteration_time_s");
  EXPECT_LT(gain_flash, 1.02);
  EXPECT_LT(gain_flash, gain_noflash - 0.1);
  // With full recomputation nothing is evicted: the two schedules coincide.
  EXPECT_NEAR(figure(rows["false bpipe full"], "iteration_time_s"), onefoneb_noflash,
              0.01 * onefoneb_noflash);
  fs::remove_all(dir);
}

// Llama-3.1 405B (12 of its 126 layers, 72 sequences) on 576 H100s and 576
// B200s, BF16 and FP8, each with the study's best plan for the full model.
TEST(FoundingStudies, HardwareGenerationsB200AndFp8BuyThroughputAndTokensPerJoule) {
  const auto dir = fresh_dir("study-generations");
  const auto r = run_cli({"sweep", "scenarios/study-hardware-generations.yaml", "--out", dir.string(), "-j",
                          "2", "--quiet", "--keep", "summary", "--only",
                          "variant=405b-h100-bf16,405b-h100-fp8,405b-b200-bf16,405b-b200-fp8", "--set",
                          "model.layers=12", "--set", "plan.global_batch_size=72"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto results = json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(results["rows"].size(), 4u);
  auto rows = rows_by(results, {"variant"});
  const std::string per_gpu = "tokens_per_s_per_gpu";
  const std::string per_joule = "energy.tokens_per_J";
  for (const std::string gpu : {"h100", "b200"}) {
    const auto& bf16 = rows["405b-" + gpu + "-bf16"];
    const auto& fp8 = rows["405b-" + gpu + "-fp8"];
    // FP8 GEMMs buy throughput (not 2x: attention, norms and the casts stay)
    // and, at the same board power, tokens per joule.
    EXPECT_GT(figure(fp8, per_gpu), 1.2 * figure(bf16, per_gpu)) << gpu;
    EXPECT_LT(figure(fp8, per_gpu), 2.0 * figure(bf16, per_gpu)) << gpu;
    EXPECT_GT(figure(fp8, per_joule), figure(bf16, per_joule)) << gpu;
    // MFU is against the BF16 peak in both; FP8 plans add the same FLOPs
    // against the FP8 peak (twice BF16's on both GPUs); BF16 plans name no
    // precision (their summary is unchanged).
    EXPECT_FALSE(bf16.contains("mfu_fp8_peak") && bf16["mfu_fp8_peak"].is_number()) << gpu;
    const double peak_ratio = gpu == "h100" ? 989.4 / 1978.9 : 0.5;
    EXPECT_NEAR(figure(fp8, "mfu_fp8_peak"), figure(fp8, "mfu") * peak_ratio, 1e-9) << gpu;
    EXPECT_EQ(fp8["plan.precision"], "fp8") << gpu;
  }
  // B200 (2.25x H100's dense peak, 1.43x its board power) does about twice
  // the work per GPU in each precision, and more per joule.
  for (const std::string precision : {"bf16", "fp8"}) {
    const auto& h100 = rows["405b-h100-" + precision];
    const auto& b200 = rows["405b-b200-" + precision];
    EXPECT_GT(figure(b200, per_gpu), 1.7 * figure(h100, per_gpu)) << precision;
    EXPECT_LT(figure(b200, per_gpu), 2.6 * figure(h100, per_gpu)) << precision;
    EXPECT_GT(figure(b200, per_joule), 1.2 * figure(h100, per_joule)) << precision;
  }
  EXPECT_TRUE(fs::exists(dir / "plots" / "405b-tokens-per-gpu.svg"));
  fs::remove_all(dir);
}

// DeepSeek-V3 (7 of its 61 layers: 3 dense, 4 MoE, on the same 3 stages)
// in FP8 on the same 576 GPUs of DGX H100, DGX B200 and GB200 NVL72, each
// with the study's plan for the full model (the recipe's TP / EP / expert TP
// and HybridEP dispatch, the rest from `trainsim plan`;
// docs/founding_studies.md, "DeepSeek-V3"). The full-size points, BF16 too,
// and their figures: FoundingStudiesLarge.* (label slow).
TEST(FoundingStudies, HardwareGenerationsDeepSeekV3DispatchesInsideTheNvlinkDomain) {
  const auto dir = fresh_dir("study-generations-dsv3");
  const auto r = run_cli({"sweep", "scenarios/study-hardware-generations.yaml", "--out", dir.string(), "-j",
                          "2", "--quiet", "--keep", "summary", "--only",
                          "variant=dsv3-h100-fp8,dsv3-b200-fp8,dsv3-gb200-fp8", "--set", "model.layers=7"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto results = json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(results["rows"].size(), 3u);
  auto rows = rows_by(results, {"variant"});
  const auto& h100 = rows["dsv3-h100-fp8"];
  const auto& b200 = rows["dsv3-b200-fp8"];
  const auto& gb200 = rows["dsv3-gb200-fp8"];
  // The recipes' expert layouts (H100: EP 64 folded over TP 2), HybridEP
  // dispatch, every plan in memory, MFU against both peaks.
  EXPECT_EQ(h100["plan.expert_parallel"], 64);
  EXPECT_EQ(h100["plan.expert_tensor_parallel"], 1);
  EXPECT_EQ(b200["plan.expert_parallel"], 32);
  EXPECT_EQ(gb200["plan.expert_parallel"], 64);
  for (const auto* row : {&h100, &b200, &gb200}) {
    EXPECT_EQ((*row)["plan.moe_dispatcher"], "deepep") << (*row)["variant"];
    EXPECT_EQ((*row)["fits_in_memory"], true) << (*row)["variant"];
    EXPECT_EQ((*row)["plan.precision"], "fp8") << (*row)["variant"];
  }
  EXPECT_NEAR(figure(h100, "mfu_fp8_peak"), figure(h100, "mfu") * 989.4 / 1978.9, 1e-9);
  EXPECT_NEAR(figure(gb200, "mfu_fp8_peak"), figure(gb200, "mfu") * 0.5, 1e-9);
  // Exposed expert all-to-all per step, in seconds (its share of the GPUs'
  // time x the step). On the DGX nodes an EP group spans 8 (H100) or 4
  // (B200) nodes and most of each dispatch crosses the 400 Gb/s NICs; on
  // GB200 it lies inside one 64-GPU NVLink domain (full size: 0.30 s against
  // 1.62 s and 2.78 s).
  const auto all_to_all_s = [](const json& row) {
    return figure(row, "utilization.exposed_comm_by_op_fraction.ep_all_to_all") *
           figure(row, "iteration_time_s");
  };
  EXPECT_LT(all_to_all_s(gb200), 0.3 * all_to_all_s(b200));
  EXPECT_LT(all_to_all_s(gb200), 0.2 * all_to_all_s(h100));
  EXPECT_LT(all_to_all_s(b200), all_to_all_s(h100));
  // Hence GB200 NVL72 is far ahead of B200 per GPU for DeepSeek-V3 (full
  // size: 1.78x), where for the dense Llamas it is 1.06-1.10x; B200 ahead of
  // H100 (full size: 1.70x).
  const std::string per_gpu = "tokens_per_s_per_gpu";
  EXPECT_GT(figure(gb200, per_gpu), 1.3 * figure(b200, per_gpu));
  EXPECT_GT(figure(b200, per_gpu), 1.5 * figure(h100, per_gpu));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
