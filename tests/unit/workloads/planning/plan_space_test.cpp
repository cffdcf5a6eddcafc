// The plan search's space (workloads/planning/plan_space.hpp): which plans it holds,
// why the others are pruned and how many, and the analytic estimate's closed
// forms (workloads/planning/plan_estimate.hpp) on uniform stages.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/planning/plan_estimate.hpp"
#include "workloads/planning/plan_space.hpp"

namespace trainsim::workloads {
namespace {

std::size_t pruned(const PlanSpace& space, PruneReason reason) {
  return space.pruned[static_cast<std::size_t>(reason)];
}

ModelSpec six_by_six() {
  ModelSpec model = *find_model_preset("gpt3-125m");
  model.layers = 6;
  model.heads = 6;
  model.hidden = 768;
  return model;
}

// Counted by hand, on 5 layers: tp in {1, 2, 4, 8}; pp over the divisors of
// 8 / tp; mb 1, 2.
//   tp 4 and 8 do not divide 6 heads: (2 + 1) pp values x 2 mb = 6 plans;
//   pp 4 and 8 split 5 layers neither evenly nor with the embedding and / or
//   the loss counted as layers (5, 6, 7): tp 1 (pp 4, 8) and tp 2 (pp 4),
//   x 2 mb = 6; pp 2 runs Megatron's split with the loss counted, [3, 2];
//   tp 1 pp 1 dp 8 with mb 2 needs a batch that 16 divides, not 8: 1;
//   the 7 others are candidates.
TEST(PlanSpace, PrunesEachPlanForTheFirstRuleItBreaks) {
  PlanSpaceOptions o;
  o.gpus = 8;
  o.gpus_per_domain = 8;
  o.global_batch_size = 8;
  o.micro_batch_sizes = {1, 2};
  o.schedules = {ScheduleKind::one_f_one_b};
  o.recompute = {Recompute::none};
  o.zero_stages = {0};
  o.sequence_parallel = {false};
  ModelSpec model = six_by_six();
  model.layers = 5;
  const PlanSpace space = enumerate_plans(model, o);
  EXPECT_EQ(pruned(space, PruneReason::tp_does_not_divide_heads), 6u);
  EXPECT_EQ(pruned(space, PruneReason::pp_does_not_divide_layers), 6u);
  EXPECT_EQ(pruned(space, PruneReason::batch_does_not_divide), 1u);
  EXPECT_EQ(pruned(space, PruneReason::schedule_rule), 0u);
  EXPECT_EQ(space.candidates.size(), 7u);
  EXPECT_EQ(space.enumerated, 20u);
  for (const auto& plan : space.candidates) {
    EXPECT_EQ(plan.gpu_count(), 8);
    EXPECT_EQ(6 % plan.tp, 0);
    if (plan.pp == 1)
      EXPECT_TRUE(plan.stage_layers.empty());
    else
      EXPECT_EQ(plan.stage_layers, (std::vector<int>{3, 2}));
    EXPECT_EQ(8 % (plan.micro_batch_size * plan.dp), 0);
  }
}

// Interleaving needs m a multiple of pp and layers divisible by pp x v; one
// stage runs 1f1b only; sequence parallelism only comes with tp > 1.
TEST(PlanSpace, AppliesScheduleRulesAndSkipsMeaninglessCombinations) {
  ModelSpec model = six_by_six();
  model.layers = 8;
  PlanSpaceOptions o;
  o.gpus = 4;
  o.gpus_per_domain = 4;
  o.global_batch_size = 4;
  o.tp = {1, 2};
  o.micro_batch_sizes = {1};
  o.schedules = {ScheduleKind::one_f_one_b, ScheduleKind::interleaved_one_f_one_b};
  o.virtual_stages = {2, 4};
  o.recompute = {Recompute::none};
  o.zero_stages = {0};
  const PlanSpace space = enumerate_plans(model, o);
  std::size_t interleaved = 0;
  for (const auto& plan : space.candidates) {
    if (plan.pp == 1) {
      EXPECT_EQ(plan.schedule, ScheduleKind::one_f_one_b);
    }
    if (plan.sequence_parallel) {
      EXPECT_GT(plan.tp, 1);
    }
    if (plan.schedule == ScheduleKind::interleaved_one_f_one_b) {
      ++interleaved;
      EXPECT_EQ(plan.micro_batches() % plan.pp, 0);
      EXPECT_EQ(model.layers % (plan.pp * plan.virtual_stages), 0);
    }
  }
  // tp 1: pp 2 (dp 2, m 2) v 2 and v 4; pp 4 (dp 1, m 4) v 2, while v 4
  // needs 16 layers (8, 9 or 10 with the embedding and the loss: pruned).
  // tp 2, sp off and on: pp 2 (dp 1, m 4) v 2 and 4.
  EXPECT_EQ(interleaved, 3u + 2u * 2u);
  EXPECT_EQ(pruned(space, PruneReason::pp_does_not_divide_layers), 1u);
  EXPECT_EQ(pruned(space, PruneReason::schedule_rule), 0u);
}

// Llama 3.1 405B's 126 layers divide by no pp of 16 x v chunks: the search
// runs Megatron's split counting the embedding and the loss as layers, the
// layout the Llama 3 paper describes (first chunk the embedding alone, last
// the output layer and loss alone).
TEST(PlanSpace, LayersThatPpDoesNotDivideRunTheEmbeddingAndLossSplit) {
  PlanSpaceOptions o;
  o.gpus = 128;
  o.gpus_per_domain = 8;
  o.global_batch_size = 16;
  o.tp = {8};
  o.pp = {16};
  o.micro_batch_sizes = {1};
  o.schedules = {ScheduleKind::interleaved_one_f_one_b};
  o.virtual_stages = {4, 8};
  o.recompute = {Recompute::none};
  o.zero_stages = {1};
  o.sequence_parallel = {true};
  const PlanSpace space = enumerate_plans(*find_model_preset("llama3.1-405b"), o);
  ASSERT_EQ(space.candidates.size(), 2u);
  for (const auto& plan : space.candidates) {
    const auto& layers = plan.stage_layers;
    ASSERT_EQ(static_cast<int>(layers.size()), 16 * plan.virtual_stages);
    const int each = 128 / (16 * plan.virtual_stages);
    EXPECT_EQ(layers.front(), each - 1);
    EXPECT_EQ(layers.back(), each - 1);
    EXPECT_EQ(layers[1], each);
    EXPECT_NE(plan_key(plan).find(fmt::format("-l{}_{}..{}", each - 1, each, each - 1)), std::string::npos)
        << plan_key(plan);
  }
}

TEST(PlanSpace, KeysAreUniqueAndSayEveryChoice) {
  PlanSpaceOptions o;
  o.gpus = 16;
  o.gpus_per_domain = 8;
  o.global_batch_size = 32;
  const PlanSpace space = enumerate_plans(*find_model_preset("gpt3-1.3b"), o);
  std::set<std::string> keys;
  for (const auto& plan : space.candidates)
    EXPECT_TRUE(keys.insert(plan_key(plan)).second) << plan_key(plan);
  ParallelPlan p{.dp = 2, .tp = 2, .pp = 4, .micro_batch_size = 2, .global_batch_size = 32};
  p.schedule = ScheduleKind::interleaved_one_f_one_b;
  p.virtual_stages = 2;
  p.recompute = Recompute::selective;
  p.zero_stage = 1;
  p.sequence_parallel = true;
  EXPECT_EQ(plan_key(p), "tp2-pp4-dp2-cp1-v2-mb2-interleaved_1f1b-selective-z1-sp");
  EXPECT_EQ(plan_label(p), "tp2 pp4 dp2 mb2 interleaved_1f1b v2 rc=selective zero1 sp");
}

// dp_shard is an axis of the FSDP candidates only: on 16 GPUs with tp 1,
// pp 1 (dp 16), the values 0 (full), 8, 5 (does not divide 16: skipped) and
// 16 (full again) give two FSDP plans per other choice, and ZeRO-1 one; the
// hybrid one says so in its key and label.
TEST(PlanSpace, HybridShardingIsAnAxisOfTheFsdpPlansOnly) {
  PlanSpaceOptions o;
  o.gpus = 16;
  o.gpus_per_domain = 8;
  o.global_batch_size = 16;
  o.tp = {1};
  o.pp = {1};
  o.micro_batch_sizes = {1};
  o.recompute = {Recompute::none};
  o.zero_stages = {1, 3};
  o.dp_shards = {0, 8, 5, 16};
  const PlanSpace space = enumerate_plans(*find_model_preset("gpt3-1.3b"), o);
  std::vector<std::string> keys;
  for (const auto& plan : space.candidates)
    keys.push_back(plan_key(plan));
  EXPECT_EQ(keys, (std::vector<std::string>{"tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z1",
                                            "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z3",
                                            "tp1-pp1-dp16-cp1-v1-mb1-1f1b-none-z3-s8"}));
  EXPECT_EQ(plan_label(space.candidates.back()), "tp1 pp1 dp16 mb1 1f1b zero3 shard8");
  EXPECT_EQ(space.candidates.front().dp_shard, 0);
}

// The ring closed forms of docs/collectives.md.
TEST(PlanEstimate, RingTimesFollowTheClosedForms) {
  const double a = 5e-6, s = 1e9, b = 1e11, launch = 3e-5;
  EXPECT_DOUBLE_EQ(ring_time_s(CollectiveOp::all_reduce, s, 8, 1, b, a, launch),
                   2 * 7 * (a + s / (8 * b)) + launch);
  EXPECT_DOUBLE_EQ(ring_time_s(CollectiveOp::reduce_scatter, s, 8, 4, b, a, launch),
                   7 * (a + s / (8 * 4 * b)) + launch);
  EXPECT_DOUBLE_EQ(ring_time_s(CollectiveOp::all_gather, s, 1, 1, b, a, launch), 0);
}

// Uniform stages (F = I = W = 1 ms), free network: the schedules' textbook
// iteration times (Qi et al., ICLR 2024, for ZB-H1).
TEST(PlanEstimate, PipelineTermsAreTheSchedulesClosedForms) {
  ModelSpec model = *find_model_preset("gpt3-1.3b");
  model.layers = 48;
  const auto cluster = testing::free_network_cluster(4);
  const testing::FixedCostModel cost(1e-3, 1e-3, 1e-3);
  ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 8};
  const double f = 1e-3, b = 2e-3, w = 1e-3, bi = 1e-3;
  const int p = 4, m = 8;

  plan.schedule = ScheduleKind::one_f_one_b;
  auto e = estimate_plan(model, plan, cluster, cost);
  EXPECT_NEAR(e.iteration_s, (m + p - 1) * (f + b), 1e-9);
  EXPECT_NEAR(e.bubble_s, (p - 1) * (f + b), 1e-9);
  EXPECT_NEAR(e.compute_s, m * (f + b), 1e-9);

  plan.schedule = ScheduleKind::interleaved_one_f_one_b;
  plan.virtual_stages = 2;
  e = estimate_plan(model, plan, cluster, cost);
  EXPECT_NEAR(e.iteration_s, (m * 2 + p - 1) * (f + b), 1e-9);  // per chunk: (m v + p - 1)(f + b)

  plan.schedule = ScheduleKind::zb_h1;
  plan.virtual_stages = 1;
  e = estimate_plan(model, plan, cluster, cost);
  EXPECT_NEAR(e.iteration_s, m * (f + bi + w) + (p - 1) * (f + bi - w), 1e-9);
}

// With plan.tp_comm_overlap an op shows C / k + (k - 1) / k max(0, C - G)
// of its TP collectives (C) behind its linear GEMMs (G), k = tp: 1/k when
// the GEMMs outlast the collectives (GPT-3 1.3B on one 8-GPU node at half
// of peak), all of it when the cost model has no GEMM time to hide them.
TEST(PlanEstimate, TpCommOverlapShowsTheLastChunkBehindLongEnoughGemms) {
  const ModelSpec model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.dp = 1, .tp = 4, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2};
  plan.sequence_parallel = true;
  const auto cluster = testing::uniform_cluster(1, 4, 300e9, 1e-6);
  const AnalyticCostModel analytic(model, plan, 0.5);
  const testing::FixedCostModel no_gemms(1e-3, 1e-3, 1e-3);
  const auto serial = estimate_plan(model, plan, cluster, analytic);
  const auto serial_fixed = estimate_plan(model, plan, cluster, no_gemms);
  plan.tp_comm_overlap = workloads::TpCommOverlap::userbuffers;
  const auto overlapped = estimate_plan(model, plan, cluster, analytic);
  ASSERT_GT(serial.tp_comm_s, 0);
  EXPECT_NEAR(overlapped.tp_comm_s, serial.tp_comm_s / 4, 1e-9 * serial.tp_comm_s);
  EXPECT_NEAR(serial.iteration_s - overlapped.iteration_s, serial.tp_comm_s * 3 / 4,
              1e-9 * serial.iteration_s);
  EXPECT_DOUBLE_EQ(estimate_plan(model, plan, cluster, no_gemms).tp_comm_s, serial_fixed.tp_comm_s);
}

// Hybrid sharding in the estimate: per layer, the gathers and the
// reduce-scatter run over the shard group and the shard's all-reduce over
// the groups, on the reduce-scatter's stream; the optimizer steps 1/s of the
// stage. On 2 nodes of 4 GPUs, dp 8, shards of 4: the DP busy time is the
// closed form below, and the optimizer's share is 8 / 4 = 2x full sharding's.
TEST(PlanEstimate, HybridShardingGathersInTheShardGroupAndAllReducesTheShards) {
  const ModelSpec model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.dp = 8, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 8};
  plan.zero_stage = 3;
  const auto cluster = testing::uniform_cluster(2, 4, 100e9, 2e-6);
  const AnalyticCostModel cost(model, plan, 0.5);
  const auto full = estimate_plan(model, plan, cluster, cost);
  plan.dp_shard = 4;
  const auto hybrid = estimate_plan(model, plan, cluster, cost);
  const double unit = model.layer_parameters();
  const double launch = cluster.collectives.launch_latency_s;
  const auto& node = cluster.groups.front();
  // A 4-GPU ring on NVLink inside a node; a 2-GPU ring over one NIC per node.
  const double nvlink = node.nvlink.effective_Bps();
  const double nic = node.nic.bandwidth_Bps * cluster.fabric.efficiency;
  const double hop = node.nic.latency_s + cluster.fabric.spine_latency_s;
  const double gather =
      ring_time_s(CollectiveOp::all_gather, 2 * unit, 4, 1, nvlink, node.nvlink.latency_s, launch);
  const double scatter =
      ring_time_s(CollectiveOp::reduce_scatter, 2 * unit, 4, 1, nvlink, node.nvlink.latency_s, launch) +
      ring_time_s(CollectiveOp::all_reduce, 2 * unit / 4, 2, 1, nic, hop, launch);
  EXPECT_NEAR(hybrid.dp_comm_s, model.layers * (2 * gather + scatter), 1e-9 * hybrid.dp_comm_s);
  EXPECT_NEAR(hybrid.optimizer_s, 2 * full.optimizer_s, 1e-6 * full.optimizer_s);
  EXPECT_NE(hybrid.dp_comm_s, full.dp_comm_s);
}

}  // namespace
}  // namespace trainsim::workloads
