#include <gtest/gtest.h>

#include "platforms/input_error.hpp"
#include "sim/scenario/infeasible_plan.hpp"
#include "sim/scenario/memory_check.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/expert_parallel.hpp"

#include <tuple>

namespace trainsim::sim {
namespace {

const char* kMinimal = R"(name: small
cluster:
  gpu: H100
  nodes: 2
  nvlink: {bandwidth: 450GBps, latency: 1.5us}
  nic: {bandwidth: 400Gbps, latency: 4us}
  fabric: {topology: fat_tree, nodes_per_leaf: 1, oversubscription: 2}
model:
  preset: gpt3-1.3b
plan:
  tp: 2
  pp: 2
  global_batch_size: 32
)";

std::vector<std::string> problems(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    scenario::parse_scenario_text(yaml, "t.yaml", overrides);
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

TEST(ScenarioLoader, ReadsUnitsPresetsAndDerivesDp) {
  const auto s = scenario::parse_scenario_text(kMinimal, "t.yaml");
  EXPECT_EQ(s.name, "small");
  EXPECT_EQ(s.cluster.gpu_count(), 16);
  EXPECT_EQ(s.cluster.groups[0].gpu.name, "H100-SXM");
  EXPECT_DOUBLE_EQ(s.cluster.groups[0].nvlink.bandwidth_Bps, 450e9);
  EXPECT_DOUBLE_EQ(s.cluster.groups[0].nvlink.latency_s, 1.5e-6);
  EXPECT_DOUBLE_EQ(s.cluster.groups[0].nic.bandwidth_Bps, 50e9);
  EXPECT_DOUBLE_EQ(s.cluster.fabric.oversubscription, 2);
  EXPECT_EQ(s.model.hidden, 2048);
  EXPECT_EQ(s.plan.dp, 4);
  EXPECT_EQ(s.plan.micro_batches(), 8);
}

// recompute: selective_op (torchtitan's per-op policy) reads, and a model
// it is not modelled for (GPT-3's GeLU MLP, no FlashAttention) is refused
// at where the value came from (here the --set), the key and the value.
TEST(ScenarioLoader, PerOpSelectiveRecomputationReadsForLlamaAndIsRefusedForGpt) {
  const auto llama =
      scenario::parse_scenario_text(kMinimal, "t.yaml",
                                    {"model.preset=llama3-8b", "model.flash_attention=true",
                                     "plan.sequence_parallel=true", "plan.recompute=selective_op"});
  EXPECT_EQ(llama.plan.recompute, workloads::Recompute::selective_op);
  const auto p = problems(kMinimal, {"plan.recompute=selective_op"});
  ASSERT_FALSE(p.empty());
  bool named = false;
  for (const auto& problem : p)
    named = named || (problem.rfind("--set plan.recompute=selective_op: ", 0) == 0 &&
                      problem.find("plan.recompute: selective_op") != std::string::npos &&
                      problem.find("GeLU MLP") != std::string::npos &&
                      problem.find("expected recompute none, selective or full") != std::string::npos);
  EXPECT_TRUE(named) << ::testing::PrintToString(p);
}

TEST(ScenarioLoader, OverridesReplaceAndAddValues) {
  const auto s =
      scenario::parse_scenario_text(kMinimal, "t.yaml", {"plan.pp=4", "cluster.nodes=4", "plan.dp=4"});
  EXPECT_EQ(s.plan.pp, 4);
  EXPECT_EQ(s.cluster.gpu_count(), 32);
  EXPECT_EQ(s.plan.dp, 4);
  EXPECT_EQ(s.plan.tp, 2);
}

TEST(ScenarioLoader, ReportsEveryProblemAtOnceWithFileLineAndKey) {
  const std::string yaml = R"(cluster:
  gpu: A100
  nodes: 1
  nic: {bandwidth: 200, latency: 5us}
  colour: blue
model:
  preset: gpt3-1.3b
  hidden: -5
plan:
  global_batch_size: 8
)";
  const auto p = problems(yaml);
  ASSERT_EQ(p.size(), 3u) << ::testing::PrintToString(p);
  EXPECT_EQ(p[0].rfind("t.yaml:4:", 0), 0u) << p[0];
  EXPECT_NE(p[0].find("cluster.nic.bandwidth"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("unit is missing"), std::string::npos) << p[0];
  EXPECT_EQ(p[1].rfind("t.yaml:5:", 0), 0u) << p[1];
  EXPECT_NE(p[1].find("cluster.colour: unknown key"), std::string::npos) << p[1];
  EXPECT_EQ(p[2].rfind("t.yaml:8:", 0), 0u) << p[2];
  EXPECT_NE(p[2].find("model.hidden: -5 is out of range"), std::string::npos) << p[2];
}

TEST(ScenarioLoader, OverrideErrorsNameTheOption) {
  const auto p = problems(kMinimal, {"plan.tp=three"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rfind("--set plan.tp=three: plan.tp: 'three' is not a whole number", 0), 0u) << p[0];
  const auto q = problems(kMinimal, {"plan"});
  ASSERT_EQ(q.size(), 1u);
  EXPECT_NE(q[0].find("expected KEY=VALUE"), std::string::npos) << q[0];
}

TEST(ScenarioLoader, MissingSectionsAndKeysAreNamed) {
  const auto p = problems("name: x\n");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NE(p[0].find("cluster: missing section"), std::string::npos) << p[0];
  EXPECT_NE(p[1].find("model: missing section"), std::string::npos) << p[1];
  EXPECT_NE(p[2].find("plan: missing section"), std::string::npos) << p[2];
}

TEST(ScenarioLoader, UnknownGpuAndPresetListTheKnownOnes) {
  const auto p = problems(kMinimal, {"cluster.gpu=A200", "model.preset=gpt5"});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NE(p[0].find("unknown GPU 'A200' (expected one of V100-SXM2-32GB"), std::string::npos) << p[0];
  EXPECT_NE(p[1].find("unknown model preset 'gpt5' (expected one of gpt3-125m"), std::string::npos) << p[1];
}

TEST(ScenarioLoader, PresetShapeFollowsOverriddenHeadsAndHidden) {
  // Shapes only: these models do not fit the minimal cluster's memory.
  const scenario::LoadOptions shapes_only{.check_memory = false};
  const auto s =
      scenario::parse_scenario_text(kMinimal, "t.yaml", {"model.hidden=4096", "model.heads=32"}, shapes_only);
  EXPECT_EQ(s.model.kv_heads, 32);
  EXPECT_EQ(s.model.ffn_hidden, 4 * 4096);
  const auto llama = scenario::parse_scenario_text(
      kMinimal, "t.yaml", {"model.preset=llama2-70b", "model.layers=40"}, shapes_only);
  EXPECT_EQ(llama.model.kv_heads, 8);
  EXPECT_EQ(llama.model.ffn_hidden, 28672);
}

TEST(ScenarioLoader, DuplicateKeysAreErrors) {
  const auto p = problems(std::string(kMinimal) + "seed: 1\nseed: 2\n");
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("seed: duplicate key"), std::string::npos) << p[0];
}

TEST(ScenarioLoader, InvalidYamlGivesItsLine) {
  const auto p = problems("cluster: [1, 2\nmodel: {}\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rfind("t.yaml:", 0), 0u) << p[0];
  EXPECT_NE(p[0].find("not valid YAML"), std::string::npos) << p[0];
}

TEST(ScenarioLoader, EveryScheduleWordParsesWithItsChunkCount) {
  const std::vector<std::tuple<std::string, workloads::ScheduleKind, int>> words = {
      {"gpipe", workloads::ScheduleKind::gpipe, 1},
      {"1f1b", workloads::ScheduleKind::one_f_one_b, 1},
      {"interleaved_1f1b", workloads::ScheduleKind::interleaved_one_f_one_b, 3},
      {"zb_h1", workloads::ScheduleKind::zb_h1, 1},
      {"zb_h2", workloads::ScheduleKind::zb_h2, 1},
      {"zb_v", workloads::ScheduleKind::zb_v, 2},
      {"bpipe", workloads::ScheduleKind::bpipe, 1},
      {"dualpipe_v", workloads::ScheduleKind::dualpipe_v, 2},
      {"dualpipe", workloads::ScheduleKind::dualpipe, 2},
  };
  for (const auto& [word, kind, chunks] : words) {
    std::vector<std::string> set = {"plan.schedule=" + word};
    if (word == "interleaved_1f1b")
      set.push_back("plan.virtual_stages=3");
    const auto s = scenario::parse_scenario_text(kMinimal, "t.yaml", set);
    EXPECT_EQ(s.plan.schedule, kind) << word;
    EXPECT_EQ(s.plan.virtual_stages, chunks) << word;
  }
}

TEST(ScenarioLoader, UnknownScheduleListsTheKnownOnes) {
  const auto p = problems(kMinimal, {"plan.schedule=chimera"});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(
      p[0].find(
          "'chimera' is not a known value (expected 'gpipe', '1f1b', 'interleaved_1f1b', 'zb_h1', 'zb_h2', "
          "'zb_v', 'bpipe', 'dualpipe_v' or 'dualpipe')"),
      std::string::npos)
      << p[0];
}

// DualPipe's rules (dualpipe.py asserts num_ranks % 2 == 0, num_chunks % 2
// == 0 and num_chunks >= 2 num_ranks), and its layers cut into pp stages
// held twice: one error each, naming the key.
TEST(ScenarioLoader, DualPipeNeedsAnEvenPipelineAndEvenMicroBatchesAtLeastTwicePp) {
  const auto one = [](const std::vector<std::string>& set) {
    auto all = set;
    all.insert(all.begin(), "plan.schedule=dualpipe");
    const auto p = problems(kMinimal, all);
    EXPECT_EQ(p.size(), 1u);
    return p.empty() ? std::string() : p[0];
  };
  EXPECT_TRUE(problems(kMinimal, {"plan.schedule=dualpipe"}).empty());
  EXPECT_NE(one({"plan.pp=1"}).find("plan.pp: 1 with schedule dualpipe"), std::string::npos);
  EXPECT_NE(one({"plan.pp=1"}).find("expected an even pp"), std::string::npos);
  // m = 36 / (1 x 4) = 9.
  EXPECT_NE(one({"plan.global_batch_size=36"}).find("plan.global_batch_size: schedule dualpipe feeds half"),
            std::string::npos);
  EXPECT_NE(one({"plan.global_batch_size=36"})
                .find("expected global_batch_size a multiple of 2 x "
                      "micro_batch_size x dp = 8"),
            std::string::npos);
  // m = 2 < 2 pp.
  EXPECT_NE(one({"plan.global_batch_size=8"}).find("needs at least 2 x pp = 4 micro-batches"),
            std::string::npos);
  // The layers divide by pp, not by pp x 2: 26 runs, 25 does not.
  EXPECT_TRUE(problems(kMinimal, {"plan.schedule=dualpipe", "model.layers=26"}).empty());
  EXPECT_NE(one({"model.layers=25"}).find("plan.pp: model.layers = 25 is not divisible by pp = 2;"),
            std::string::npos);
  // One layer count per stage of the model, not per chunk.
  EXPECT_TRUE(problems(kMinimal, {"plan.schedule=dualpipe", "plan.stage_layers=[10,14]"}).empty());
  EXPECT_NE(one({"plan.stage_layers=[6,6,6,6]"}).find("expected one layer count per stage (2 entries)"),
            std::string::npos);
  EXPECT_NE(one({"plan.virtual_stages=3"}).find("plan.virtual_stages: 3 with schedule dualpipe"),
            std::string::npos);
}

TEST(ScenarioLoader, InterleavedScheduleNeedsItsVirtualStages) {
  const auto p = problems(kMinimal, {"plan.schedule=interleaved_1f1b"});
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(
      p[0].find("plan.virtual_stages: missing: schedule interleaved_1f1b needs the number of model chunks"),
      std::string::npos)
      << p[0];
}

TEST(ScenarioLoader, VirtualStagesMustSuitTheScheduleAndTheLayers) {
  auto one = [](const std::vector<std::string>& set) {
    const auto p = problems(kMinimal, set);
    EXPECT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
    return p.empty() ? std::string() : p[0];
  };
  EXPECT_NE(one({"plan.schedule=zb_v", "plan.virtual_stages=3"})
                .find("plan.virtual_stages: 3 with schedule zb_v; "
                      "expected 2"),
            std::string::npos);
  EXPECT_NE(one({"plan.virtual_stages=2"}).find("plan.virtual_stages: 2 with schedule 1f1b; expected 1"),
            std::string::npos);
  EXPECT_NE(one({"plan.schedule=interleaved_1f1b", "plan.virtual_stages=5"})
                .find("model.layers = 24 is not divisible by pp x virtual_stages = 2 x 5 = 10"),
            std::string::npos);
}

// kMinimal: dp 4, micro-batch 1, so m = global_batch_size / 4.
TEST(ScenarioLoader, MicroBatchCountsMustSuitTheSchedule) {
  const auto p = problems(
      kMinimal, {"plan.schedule=interleaved_1f1b", "plan.virtual_stages=2", "plan.global_batch_size=12"});
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(
      p[0].find("plan.global_batch_size: schedule interleaved_1f1b runs micro-batches in groups of pp = 2"),
      std::string::npos)
      << p[0];
  EXPECT_NE(p[0].find("m = global_batch_size / (micro_batch_size x dp) = 12 / (1 x 4) = 3"),
            std::string::npos)
      << p[0];
  EXPECT_NE(p[0].find("expected global_batch_size a multiple of pp x micro_batch_size x dp = 8"),
            std::string::npos)
      << p[0];
  const auto q = problems(kMinimal, {"plan.schedule=dualpipe_v", "plan.global_batch_size=12"});
  ASSERT_EQ(q.size(), 1u) << ::testing::PrintToString(q);
  EXPECT_NE(q[0].find("needs at least 2 x pp = 4 micro-batches per pipeline"), std::string::npos) << q[0];
}

// kMinimal: 16 H100s, tp 2 x pp 2.
TEST(ScenarioLoader, ParallelismOptionsReachThePlan) {
  const auto s = scenario::parse_scenario_text(
      kMinimal, "t.yaml",
      {"plan.sequence_parallel=true", "plan.context_parallel=2", "plan.zero_stage=1",
       "plan.overlap_grad_reduce=true", "plan.grad_bucket_size=25MB"});
  EXPECT_TRUE(s.plan.sequence_parallel);
  EXPECT_EQ(s.plan.cp, 2);
  EXPECT_EQ(s.plan.dp, 2);  // auto: 16 / (tp 2 x pp 2 x cp 2)
  EXPECT_EQ(s.plan.zero_stage, 1);
  EXPECT_TRUE(s.plan.overlap_grad_reduce);
  EXPECT_DOUBLE_EQ(s.plan.grad_bucket_size_bytes(), 25e6);
  const auto d = scenario::parse_scenario_text(kMinimal, "t.yaml");
  EXPECT_FALSE(d.plan.sequence_parallel);
  EXPECT_EQ(d.plan.cp, 1);
  EXPECT_EQ(d.plan.zero_stage, 0);
  EXPECT_FALSE(d.plan.overlap_grad_reduce);
  EXPECT_DOUBLE_EQ(d.plan.grad_bucket_size_bytes(), 40e6 * 2);  // Megatron's 40M bf16 gradients
}

TEST(ScenarioLoader, ParallelismOptionRulesNameTheKeyAndTheFix) {
  auto one = [](const std::vector<std::string>& set) {
    const auto p = problems(kMinimal, set);
    EXPECT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
    return p.empty() ? std::string() : p[0];
  };
  EXPECT_NE(one({"plan.tp=1", "plan.sequence_parallel=true"})
                .find("plan.sequence_parallel: true with tp = 1: sequence parallelism splits"),
            std::string::npos);
  EXPECT_NE(
      one({"plan.context_parallel=3"}).find("tp x pp x cp = 2 x 2 x 3 = 12 does not divide the cluster's 16"),
      std::string::npos);
  EXPECT_NE(one({"plan.context_parallel=4", "model.seq_len=2052"})
                .find("plan.context_parallel: 4 does not suit model.seq_len = 2052"),
            std::string::npos);
  EXPECT_NE(one({"plan.zero_stage=4"}).find("plan.zero_stage: 4 is out of range"), std::string::npos);
  EXPECT_NE(one({"plan.zero_stage=3", "plan.overlap_grad_reduce=true"})
                .find("plan.overlap_grad_reduce: does not apply with zero_stage 3"),
            std::string::npos);
  EXPECT_NE(
      one({"plan.grad_bucket_size=25MB"}).find("plan.grad_bucket_size: given with overlap_grad_reduce off"),
      std::string::npos);
  EXPECT_NE(one({"plan.overlap_grad_reduce=true", "plan.grad_bucket_size=25"}).find("plan.grad_bucket_size"),
            std::string::npos);
  EXPECT_NE(one({"plan.dp=4", "plan.context_parallel=2"})
                .find("plan.dp: dp x tp x pp x cp = 4 x 2 x 2 x 2 = 32 GPUs, but the cluster has 16"),
            std::string::npos);
  EXPECT_NE(one({"plan.framework=pytorch_fsdp2", "plan.zero_stage=1"})
                .find("plan.framework: pytorch_fsdp2 shards with FSDP, but zero_stage is 1; expected "
                      "zero_stage: 3"),
            std::string::npos);
  EXPECT_NE(one({"plan.framework=deepspeed"}).find("plan.framework"), std::string::npos);
  EXPECT_NE(one({"plan.tp_comm_overlap=true"})
                .find("plan.tp_comm_overlap: true without sequence parallelism: Transformer Engine's "
                      "userbuffers overlap"),
            std::string::npos);
  EXPECT_NE(one({"plan.tp_comm_overlap=yes please"}).find("plan.tp_comm_overlap"), std::string::npos);
}

// plan.tp_comm_overlap: false, true (Transformer Engine's userbuffers) or
// torch_async (PyTorch's async TP, workloads/torch_async_tp.hpp).
TEST(ScenarioLoader, TpCommOverlapReadsItsThreeWords) {
  using workloads::TpCommOverlap;
  const auto read = [](const std::string& word) {
    return scenario::parse_scenario_text(kMinimal, "t.yaml",
                                         {"plan.sequence_parallel=true", "plan.tp_comm_overlap=" + word})
        .plan.tp_comm_overlap;
  };
  EXPECT_EQ(read("false"), TpCommOverlap::none);
  EXPECT_EQ(read("true"), TpCommOverlap::userbuffers);
  EXPECT_EQ(read("torch_async"), TpCommOverlap::torch_async);
  EXPECT_EQ(scenario::parse_scenario_text(kMinimal, "t.yaml").plan.tp_comm_overlap, TpCommOverlap::none);
  const auto p = problems(kMinimal, {"plan.sequence_parallel=true", "plan.tp_comm_overlap=async"});
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(p[0].find("plan.tp_comm_overlap"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("torch_async"), std::string::npos) << p[0];  // the words it takes
}

// torch_async where torch's async TP cannot run: no sequence parallelism
// (nothing to fuse), eager PyTorch (it is a torch.compile pass), a MoE model
// (not modelled), a TP group across NVLink domains (symmetric memory maps
// peers over NVLink only).
TEST(ScenarioLoader, TorchAsyncTpIsRefusedWhereItCannotRunWithTheFix) {
  auto one = [](const std::vector<std::string>& set) {
    const auto p = problems(kMinimal, set);
    EXPECT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
    return p.empty() ? std::string() : p[0];
  };
  EXPECT_NE(
      one({"plan.tp_comm_overlap=torch_async"})
          .find("plan.tp_comm_overlap: torch_async without sequence parallelism: torch's async TP fuses "
                "the sequence-parallel all-gather"),
      std::string::npos);
  EXPECT_NE(one({"plan.sequence_parallel=true", "plan.tp_comm_overlap=torch_async", "plan.pp=1",
                 "plan.framework=pytorch_fsdp2", "plan.zero_stage=3"})
                .find("plan.tp_comm_overlap: torch_async with framework pytorch_fsdp2: async TP is a "
                      "torch.compile pass"),
            std::string::npos);
  EXPECT_NE(
      one({"plan.sequence_parallel=true", "plan.tp_comm_overlap=torch_async", "model.preset=mixtral-8x7b"})
          .find("plan.tp_comm_overlap: torch_async with a MoE model"),
      std::string::npos);
  EXPECT_NE(
      one({"plan.sequence_parallel=true", "plan.tp_comm_overlap=torch_async", "plan.tp=16", "plan.pp=1"})
          .find("plan.tp_comm_overlap: torch_async with tp 16: a TP group spans GPUs 0 and 8 of different "
                "NVLink domains"),
      std::string::npos);
  EXPECT_TRUE(
      problems(kMinimal, {"plan.sequence_parallel=true", "plan.tp_comm_overlap=torch_async"}).empty());
}

TEST(ScenarioLoader, ComputeInterferenceIsOffByDefaultAndAtMostHalf) {
  EXPECT_EQ(scenario::parse_scenario_text(kMinimal, "t.yaml").cluster.collectives.compute_interference, 0);
  const auto s =
      scenario::parse_scenario_text(kMinimal, "t.yaml", {"cluster.collectives.compute_interference=0.15"});
  EXPECT_DOUBLE_EQ(s.cluster.collectives.compute_interference, 0.15);
  const auto p = problems(kMinimal, {"cluster.collectives.compute_interference=0.6"});
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(p[0].find("cluster.collectives.compute_interference"), std::string::npos) << p[0];
}

TEST(ScenarioLoader, FrameworkReachesThePlanAndDefaultsToMegatron) {
  EXPECT_EQ(scenario::parse_scenario_text(kMinimal, "t.yaml").plan.framework, workloads::Framework::megatron);
  const auto s =
      scenario::parse_scenario_text(kMinimal, "t.yaml", {"plan.framework=pytorch_fsdp", "plan.zero_stage=3"});
  EXPECT_EQ(s.plan.framework, workloads::Framework::pytorch_fsdp);
  EXPECT_TRUE(s.plan.pytorch());
}

// model.tied_embeddings: the preset's unless set (GPT tied, Llama untied),
// read as a boolean, anything else refused at the key.
TEST(ScenarioLoader, TiedEmbeddingsAreThePresetsUnlessSet) {
  EXPECT_TRUE(scenario::parse_scenario_text(kMinimal, "t.yaml").model.tied_embeddings);
  EXPECT_FALSE(scenario::parse_scenario_text(kMinimal, "t.yaml", {"model.tied_embeddings=false"})
                   .model.tied_embeddings);
  EXPECT_FALSE(
      scenario::parse_scenario_text(kMinimal, "t.yaml", {"model.preset=llama2-7b"}).model.tied_embeddings);
  const auto bad = problems(kMinimal, {"model.tied_embeddings=sometimes"});
  ASSERT_FALSE(bad.empty());
  EXPECT_NE(bad.front().find("tied_embeddings"), std::string::npos) << bad.front();
}

TEST(ScenarioLoader, PrecisionIsBf16UnlessAskedAndFp8KeysReachThePlan) {
  const auto bf16 = scenario::parse_scenario_text(kMinimal, "t.yaml");
  EXPECT_EQ(bf16.plan.precision, workloads::Precision::bf16);
  EXPECT_FALSE(bf16.plan.fp8());
  const auto s = scenario::parse_scenario_text(
      kMinimal, "t.yaml", {"plan.precision=fp8", "plan.fp8_recipe=current", "plan.fp8_param_gather=true"});
  EXPECT_TRUE(s.plan.fp8());
  EXPECT_EQ(s.plan.fp8_recipe, workloads::Fp8Recipe::current);
  EXPECT_TRUE(s.plan.fp8_param_gather);
  // The recipe keys are allowed beside bf16 (a sweep over plan.precision keeps them).
  EXPECT_TRUE(problems(kMinimal, {"plan.fp8_recipe=current"}).empty());
}

// FP8 needs FP8 tensor cores and curves, block scaling in hardware for MXFP8,
// and the per-op cost model; each refusal names the GPU and what to change.
TEST(ScenarioLoader, Fp8NeedsFp8TensorCoresAndMxfp8NeedsBlackwell) {
  const auto a100 = problems(kMinimal, {"cluster.gpu=A100-SXM-80GB", "plan.precision=fp8"});
  ASSERT_EQ(a100.size(), 1u);
  EXPECT_NE(a100[0].find("plan.precision"), std::string::npos) << a100[0];
  EXPECT_NE(a100[0].find("fp8 on A100-SXM-80GB, which has no FP8 tensor cores"), std::string::npos)
      << a100[0];
  const auto hopper = problems(kMinimal, {"plan.precision=fp8", "plan.fp8_recipe=mxfp8"});
  ASSERT_EQ(hopper.size(), 1u);
  EXPECT_NE(hopper[0].find("mxfp8 on H100-SXM"), std::string::npos) << hopper[0];
  EXPECT_NE(hopper[0].find("Blackwell"), std::string::npos) << hopper[0];
  EXPECT_TRUE(
      problems(kMinimal, {"cluster.gpu=B200", "plan.precision=fp8", "plan.fp8_recipe=mxfp8"}).empty());
  const auto flat = problems(kMinimal, {"plan.precision=fp8", "cluster.compute_efficiency=0.5"});
  ASSERT_EQ(flat.size(), 1u);
  EXPECT_NE(flat[0].find("compute_efficiency"), std::string::npos) << flat[0];
  const auto word = problems(kMinimal, {"plan.precision=fp4"});
  ASSERT_EQ(word.size(), 1u);
  EXPECT_NE(word[0].find("bf16"), std::string::npos) << word[0];
}

// plan.dp_shard (hybrid sharding): FSDP only, a divisor of dp x cp; the
// error names the file's line, the key, the value and what was expected.
TEST(ScenarioLoader, HybridShardingNeedsFsdpAndADivisorOfTheDataParallelGpus) {
  const auto s = scenario::parse_scenario_text(kMinimal, "t.yaml", {"plan.zero_stage=3", "plan.dp_shard=2"});
  EXPECT_EQ(s.plan.zero_shard_size(), 2);
  EXPECT_TRUE(s.plan.hybrid_sharded());
  EXPECT_FALSE(
      scenario::parse_scenario_text(kMinimal, "t.yaml", {"plan.zero_stage=3"}).plan.hybrid_sharded());
  auto p = problems(kMinimal, {"plan.dp_shard=2"});
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(p[0].find("plan.dp_shard: 2 with zero_stage 0: hybrid sharding is FSDP's"), std::string::npos)
      << p[0];
  const std::string yaml = std::string(kMinimal) + "  zero_stage: 3\n  dp_shard: 3\n";
  p = problems(yaml);
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(p[0].find("t.yaml:15:13"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("plan.dp_shard: 3 does not divide dp x cp = 4 x 1 = 4"), std::string::npos) << p[0];
  EXPECT_NE(p[0].find("expected a divisor of 4"), std::string::npos) << p[0];
  EXPECT_FALSE(problems(kMinimal, {"plan.zero_stage=3", "plan.dp_shard=0"}).empty());
  p = problems(kMinimal, {"plan.zero_stage=3", "plan.dp_shard=1"});
  ASSERT_EQ(p.size(), 1u) << ::testing::PrintToString(p);
  EXPECT_NE(p[0].find("plan.dp_shard: 1 shards nothing"), std::string::npos) << p[0];
}

// GPT-3 13B on 16 H100s with tp 2 x pp 2: 16 bytes per parameter of a
// quarter of the model is 48 GiB per GPU before any activation; with 8
// micro-batches of 4 sequences in 1F1B it does not fit, and the error says
// which GPU, how much and why.
TEST(ScenarioLoader, PlanThatDoesNotFitInMemoryIsInfeasibleWithTheBreakdown) {
  const std::vector<std::string> big = {"model.preset=gpt3-13b", "plan.micro_batch_size=4",
                                        "plan.global_batch_size=64"};
  try {
    scenario::parse_scenario_text(kMinimal, "t.yaml", big);
    FAIL() << "expected scenario::InfeasiblePlan";
  } catch (const scenario::InfeasiblePlan& e) {
    EXPECT_EQ(e.reason(), scenario::Infeasibility::does_not_fit_in_memory);
    ASSERT_FALSE(e.problems().empty());
    const auto& p = e.problems()[0];
    EXPECT_EQ(p.rfind("t.yaml:", 0), 0u) << p;
    EXPECT_NE(p.find("plan: does not fit in GPU memory: GPU 0 (pipeline stage 0, node 0, like the stage's "
                     "other 7 GPUs) needs"),
              std::string::npos)
        << p;
    EXPECT_NE(p.find("but the H100-SXM has 80GiB: weights "), std::string::npos) << p;
    for (const char* part : {"gradients ", "optimizer state ", "activations ", "buffers ", "--allow-oom"})
      EXPECT_NE(p.find(part), std::string::npos) << part << ": " << p;
  }
  // The same plan, memory unchecked (trainsim run --allow-oom), loads; and
  // ZeRO-3 over the 4 data-parallel GPUs with selective recomputation fits.
  EXPECT_NO_THROW(scenario::parse_scenario_text(kMinimal, "t.yaml", big, {.check_memory = false}));
  auto fits = big;
  fits.insert(fits.end(), {"plan.zero_stage=3", "plan.recompute=selective", "plan.micro_batch_size=1",
                           "plan.global_batch_size=32"});
  EXPECT_NO_THROW(scenario::parse_scenario_text(kMinimal, "t.yaml", fits));
}

// Imbalanced routing: the fit check takes each GPU's own load of routed
// copies. Mixtral's shape cut to 4 layers on 16 H100s, ep 8 (one expert a
// GPU), 8 sequences a micro-batch: balanced it needs 46.5 GiB; under Zipf
// s = 2 (seed 3) the GPUs of EP rank 7 peak highest, at 96 GiB, so the
// plan is refused naming GPU 7 (the rank's other GPU is
// 15); a capacity factor caps every expert at 1.25 x the balanced load and
// the plan fits again.
TEST(ScenarioLoader, SkewedRoutingIsRefusedOnTheBusiestExpertGpusMemory) {
  const std::string yaml = R"(name: skew
cluster:
  preset: dgx-h100-ndr
  nodes: 2
model:
  preset: mixtral-8x7b
  layers: 4
plan:
  tp: 1
  pp: 1
  dp: 16
  expert_parallel: 8
  micro_batch_size: 8
  global_batch_size: 128
  zero_stage: 1
)";
  EXPECT_NO_THROW(scenario::parse_scenario_text(yaml, "t.yaml"));
  const std::vector<std::string> skew = {"model.moe.routing=zipf", "model.moe.routing_skew=2",
                                         "model.moe.routing_seed=3"};
  try {
    scenario::parse_scenario_text(yaml, "t.yaml", skew);
    FAIL() << "expected scenario::InfeasiblePlan";
  } catch (const scenario::InfeasiblePlan& e) {
    EXPECT_EQ(e.reason(), scenario::Infeasibility::does_not_fit_in_memory);
    ASSERT_FALSE(e.problems().empty());
    EXPECT_NE(e.problems()[0].find("GPU 7 (pipeline stage 0, node 0, like the stage's other 1 GPU) needs"),
              std::string::npos)
        << e.problems()[0];
  }
  const auto unchecked = scenario::parse_scenario_text(yaml, "t.yaml", skew, {.check_memory = false});
  const auto estimate = scenario::estimate_scenario_memory(unchecked);
  EXPECT_EQ(estimate.stages[0].ep_rank, 7);
  EXPECT_EQ(workloads::expert_parallel_rank_of(unchecked.plan, 15), 7);
  auto capped = skew;
  capped.push_back("model.moe.capacity_factor=1.25");
  EXPECT_NO_THROW(scenario::parse_scenario_text(yaml, "t.yaml", capped));
}

// Megatron-LM users write its argument names: they read as trainsim's keys,
// in the file and in --set, and a slip gets a "did you mean".
TEST(ScenarioLoader, MegatronArgumentNamesAreAliasesOfTheModelAndPlanKeys) {
  const std::string yaml = R"(cluster: {gpu: H100, nodes: 2, nvlink: {bandwidth: 450GBps, latency: 1.5us},
  nic: {bandwidth: 400Gbps, latency: 4us}, fabric: {topology: single_switch}}
model:
  num_layers: 8
  hidden_size: 1024
  num_attention_heads: 16
  seq_length: 1024
  padded_vocab_size: 51200
plan:
  tensor_model_parallel_size: 2
  pipeline_model_parallel_size: 4
  recompute_granularity: selective
  micro_batch_size: 1
  global_batch_size: 32
)";
  const auto s = scenario::parse_scenario_text(
      yaml, "m.yaml", {"plan.virtual_pipeline_model_parallel_size=2", "plan.schedule=interleaved_1f1b"});
  EXPECT_EQ(s.model.layers, 8);
  EXPECT_EQ(s.model.hidden, 1024);
  EXPECT_EQ(s.model.heads, 16);
  EXPECT_EQ(s.model.seq_len, 1024);
  EXPECT_EQ(s.model.vocab, 51200);
  EXPECT_EQ(s.plan.tp, 2);
  EXPECT_EQ(s.plan.pp, 4);
  EXPECT_EQ(s.plan.dp, 2);
  EXPECT_EQ(s.plan.virtual_stages, 2);
  EXPECT_EQ(s.plan.recompute, workloads::Recompute::selective);

  const auto slips = problems(kMinimal, {"model.hiden=2048", "plan.tensor_model_parallel=2"});
  ASSERT_EQ(slips.size(), 2u);
  EXPECT_NE(slips[0].find("model.hiden: unknown key (did you mean 'hidden'?"), std::string::npos) << slips[0];
  EXPECT_NE(slips[1].find("(did you mean 'tensor_model_parallel_size'?"), std::string::npos) << slips[1];
}

}  // namespace
}  // namespace trainsim::sim
