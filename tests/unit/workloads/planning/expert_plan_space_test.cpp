// The plan search on MoE models (workloads/planning/plan_space.hpp,
// expert_estimate.hpp): expert parallelism is a searched dimension whose
// values are those the loader accepts, and the estimate's expert
// all-to-alls and expert gradient reduction equal their hand computation.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/planning/expert_estimate.hpp"
#include "workloads/planning/merged_step_estimate.hpp"
#include "workloads/planning/plan_estimate.hpp"
#include "workloads/planning/plan_space.hpp"
#include "workloads/planning/routing_skew_estimate.hpp"

namespace trainsim::workloads {
namespace {

using testing::small_moe_model;

PlanSpaceOptions sixteen_gpus() {
  PlanSpaceOptions o;
  o.gpus = 16;
  o.gpus_per_domain = 8;
  o.global_batch_size = 32;
  o.pp = {1};
  o.micro_batch_sizes = {1};
  o.schedules = {ScheduleKind::one_f_one_b};
  o.recompute = {Recompute::none};
  return o;
}

// 8 experts on 16 GPUs (pp 1): tp 1 (dp 16) takes ep 1, 2, 4, 8 (16 does
// not divide the experts) under ZeRO 0 and 1, ep 1 alone under ZeRO 2 and
// 3; tp 2, 4, 8 (dp 8, 4, 2) take the divisors of their dp with sequence
// parallelism, ep 1 without. With sequence parallelism and ZeRO 0 / 1 each
// divisor etp of tp below it is a layout too, whose ep divides tp x dp /
// etp (and the experts): 92 plans in all, each once.
TEST(ExpertPlanSpace, SearchesTheExpertParallelDegreesTheLoaderAccepts) {
  const ModelSpec model = small_moe_model(2, 8, 2, 1024);
  const PlanSpace space = enumerate_plans(model, sixteen_gpus());
  // (tp, zero, sp, etp) -> ep values
  std::map<std::tuple<int, int, bool, int>, std::set<int>> ep_of;
  std::set<std::string> keys;
  for (const auto& plan : space.candidates) {
    ep_of[{plan.tp, plan.zero_stage, plan.sequence_parallel, plan.etp}].insert(plan.ep);
    EXPECT_TRUE(keys.insert(plan_key(plan)).second) << plan_key(plan);
  }
  const std::set<int> all{1, 2, 4, 8};
  for (int zero : {0, 1}) {
    EXPECT_EQ((ep_of[{1, zero, false, 0}]), all);
    EXPECT_EQ((ep_of[{2, zero, true, 0}]), all);
    EXPECT_EQ((ep_of[{4, zero, true, 0}]), (std::set<int>{1, 2, 4}));
    EXPECT_EQ((ep_of[{8, zero, true, 0}]), (std::set<int>{1, 2}));
    for (int tp : {2, 4, 8})
      EXPECT_EQ((ep_of[{tp, zero, false, 0}]), std::set<int>{1});
    // Expert TP below tp: ep over tp x dp / etp = 16, 16 / etp GPUs.
    EXPECT_EQ((ep_of[{2, zero, true, 1}]), all);
    EXPECT_EQ((ep_of[{4, zero, true, 1}]), all);
    EXPECT_EQ((ep_of[{4, zero, true, 2}]), all);
    EXPECT_EQ((ep_of[{8, zero, true, 1}]), all);
    EXPECT_EQ((ep_of[{8, zero, true, 2}]), all);
    EXPECT_EQ((ep_of[{8, zero, true, 4}]), (std::set<int>{1, 2, 4}));
  }
  for (int zero : {2, 3}) {
    EXPECT_EQ((ep_of[{1, zero, false, 0}]), std::set<int>{1});
    for (int tp : {2, 4, 8})
      EXPECT_EQ((ep_of[{tp, zero, true, 0}]), std::set<int>{1});
  }
  // tp 1: 4 + 4 + 1 + 1; tp 2, 4, 8 without sp 4 each, with sp and etp =
  // tp (4 + 4 + 1 + 1), (3 + 3 + 1 + 1), (2 + 2 + 1 + 1); etp below tp
  // under ZeRO 0 and 1: tp 2: 4 x 2, tp 4: (4 + 4) x 2, tp 8: (4 + 4 + 3) x 2.
  EXPECT_EQ(space.candidates.size(), 10u + 12u + 10u + 8u + 6u + 8u + 16u + 22u);
  EXPECT_EQ(space.enumerated, space.candidates.size());
  EXPECT_NE(keys.count("tp1-pp1-dp16-ep8-cp1-v1-mb1-1f1b-none-z1"), 0u);
  EXPECT_EQ(keys.count("tp1-pp1-dp16-ep16-cp1-v1-mb1-1f1b-none-z1"), 0u);
  EXPECT_NE(keys.count("tp4-pp1-dp4-ep8-etp2-cp1-v1-mb1-1f1b-none-z1-sp"), 0u);
}

// --set plan.expert_tensor_parallel=[1,4,3]: 4 is tp (the key left out), 3
// divides no tp; a deepep dispatcher searches every divisor too (its
// dispatch then spans the expert-TP x EP block).
TEST(ExpertPlanSpace, GivenExpertTpValuesAreKeptWhereTheyDivideTp) {
  PlanSpaceOptions o = sixteen_gpus();
  o.tp = {4};
  o.zero_stages = {1};
  o.sequence_parallel = {true};
  o.ep = {4};
  o.etp = {1, 4, 3};
  const ModelSpec model = small_moe_model(2, 8, 2, 1024);
  const PlanSpace space = enumerate_plans(model, o);
  std::set<int> etp;
  for (const auto& plan : space.candidates)
    etp.insert(plan.etp);
  EXPECT_EQ(etp, (std::set<int>{0, 1}));
  o.etp = {2};
  const PlanSpace two = enumerate_plans(model, o);
  ASSERT_EQ(two.candidates.size(), 1u);
  EXPECT_EQ(plan_label(two.candidates.front()), "tp4 pp1 dp4 ep4 etp2 mb1 1f1b zero1 sp");
  o.base.moe_dispatcher = MoeDispatcher::deepep;
  o.etp = {};
  std::set<int> deepep;
  for (const auto& plan : enumerate_plans(model, o).candidates)
    deepep.insert(plan.etp);
  EXPECT_EQ(deepep, (std::set<int>{0, 1, 2}));
}

// --set plan.expert_parallel=[2,3,16]: 3 and 16 divide no plan's experts;
// a dense model searches ep 1 alone.
TEST(ExpertPlanSpace, GivenDegreesAreKeptWhereTheyAreValidAndDenseModelsRunEpOne) {
  PlanSpaceOptions o = sixteen_gpus();
  o.tp = {1};
  o.zero_stages = {1};
  o.ep = {2, 3, 16};
  const PlanSpace moe = enumerate_plans(small_moe_model(2, 8, 2, 1024), o);
  ASSERT_EQ(moe.candidates.size(), 1u);
  EXPECT_EQ(moe.candidates.front().ep, 2);
  EXPECT_EQ(plan_label(moe.candidates.front()), "tp1 pp1 dp16 ep2 mb1 1f1b zero1");

  PlanSpaceOptions dense_options = sixteen_gpus();
  const PlanSpace dense = enumerate_plans(*find_model_preset("gpt3-125m"), dense_options);
  for (const auto& plan : dense.candidates)
    EXPECT_EQ(plan.ep, 1);
}

// DeepSeek-V3's 61 layers on 16 stages: no even split, nor with the
// embedding and the loss counted (62, 63 layers); the last stage lighter
// (Megatron's --decoder-last-pipeline-num-layers 1), as it was trained.
TEST(ExpertPlanSpace, LayersNoSplitDividesRunALightLastStage) {
  PlanSpaceOptions o;
  o.gpus = 16;
  o.gpus_per_domain = 8;
  o.global_batch_size = 16;
  o.tp = {1};
  o.pp = {16};
  o.micro_batch_sizes = {1};
  o.schedules = {ScheduleKind::one_f_one_b};
  o.recompute = {Recompute::none};
  o.zero_stages = {0};
  ModelSpec model = small_moe_model(61, 8, 2, 1024);
  const PlanSpace space = enumerate_plans(model, o);
  ASSERT_EQ(space.candidates.size(), 1u);
  std::vector<int> expected(15, 4);
  expected.push_back(1);
  EXPECT_EQ(space.candidates.front().stage_layers, expected);
}

// ep 8 over 2 nodes of 4 GPUs (every link 100 GB/s, no latency): a pass
// pair of the all_to_all dispatcher sends 2 S (8 - 4) / 8 = S over the NIC
// and 2 S 3 / 8 over NVLink, S = 2 b s k h bytes; the NIC sets the time.
TEST(ExpertEstimate, AllToAllPassPairIsTheNicBytesOverItsBandwidth) {
  const ModelSpec model = small_moe_model(2, 8, 2, 1024);
  auto cluster = testing::uniform_cluster(2, 4, 100e9, 0);
  ParallelPlan plan;
  plan.dp = 8;
  plan.ep = 8;
  plan.micro_batch_size = 2;
  plan.global_batch_size = 16;
  const double s = 2.0 * 2 * model.seq_len * model.moe.top_k * model.hidden;
  EXPECT_DOUBLE_EQ(ep_all_to_all_bytes(model, plan), s);
  const auto e = expert_exchange_estimate(model, plan, cluster, 0);
  EXPECT_DOUBLE_EQ(e.remote_bytes, s);
  EXPECT_DOUBLE_EQ(e.nvlink_bytes, 2 * s * 3 / 8);
  EXPECT_DOUBLE_EQ(e.pass_pair_s, s / 100e9);
  // Within one node (ep 4): NVLink alone, 2 S 3 / 4.
  plan.ep = 4;
  const auto inside = expert_exchange_estimate(model, plan, cluster, 0);
  EXPECT_DOUBLE_EQ(inside.remote_bytes, 0);
  EXPECT_DOUBLE_EQ(inside.pass_pair_s, 2 * s * 3 / 4 / 100e9);
  // No expert parallelism, no exchange.
  plan.ep = 1;
  EXPECT_EQ(expert_exchange_estimate(model, plan, cluster, 0).pass_pair_s, 0);
}

// The whole estimate on fixed compute (forward 10 ms, backward 20 ms per
// micro-batch), pp 1, m 2, 2 MoE layers: each micro-batch's forward runs 2
// passes per layer (1 pair), its backward 2 (1 pair): 2 x 2 pairs per
// micro-batch, 8 in the iteration, serial with the compute. With
// moe_a2a_overlap the merged step runs the two ops piece by piece
// (merged_step_estimate.hpp): forward pieces of 5 ms, backward pieces of
// 10 ms.
TEST(ExpertEstimate, ExpertAllToAllsAddTheirPassPairsToTheIteration) {
  const ModelSpec model = small_moe_model(2, 8, 2, 1024);
  auto cluster = testing::uniform_cluster(2, 4, 100e9, 0);
  ParallelPlan plan;
  plan.dp = 8;
  plan.ep = 8;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 16;
  const testing::FixedCostModel cost(0.010, 0.020);
  const double pair = expert_exchange_estimate(model, plan, cluster, 0).pass_pair_s;
  ASSERT_GT(pair, 0);
  const PlanEstimate with_ep = estimate_plan(model, plan, cluster, cost);
  EXPECT_DOUBLE_EQ(with_ep.ep_comm_s, 2 * 2 * 2 * pair);
  ParallelPlan without = plan;
  without.ep = 1;
  const PlanEstimate plain = estimate_plan(model, without, cluster, cost);
  EXPECT_EQ(plain.ep_comm_s, 0);
  // The pipeline term grows by the all-to-alls (m (F + B) with pp 1).
  EXPECT_NEAR((with_ep.iteration_s - with_ep.dp_exposed_s - with_ep.optimizer_s) -
                  (plain.iteration_s - plain.dp_exposed_s - plain.optimizer_s),
              8 * pair, 1e-12);

  // Overlapped: of a rank's m = 2 forwards and backwards, the warm-up
  // forward and the cool-down backward (p - r = 1 each) have no partner and
  // show whole (4 pairs). On these fast links the merged step shows 2 of
  // its 4: F0's under B0, B0's under F1, F1's after it (B1 waits for the
  // forward's end), B1's after the step.
  plan.moe_a2a_overlap = true;
  EXPECT_NEAR(estimate_plan(model, plan, cluster, cost).ep_comm_s, 2 * (0.5 * 2 * pair + 0.5 * 4 * pair),
              1e-12);
  // On 1000 times slower links the merged step's all-to-alls outlast the
  // pieces and share the links; what it takes beyond its 30 ms of compute.
  auto slow = testing::uniform_cluster(2, 4, 100e6, 0);
  const double a = expert_exchange_estimate(model, plan, slow, 0).pass_pair_s;
  ASSERT_GT(2 * a, 0.020);
  const MergedOp forward{.pieces = {{0.005, a}, {0.005, a}}, .tail_s = 0};
  const MergedOp backward{.pieces = {{0.010, a}, {0.010, a}}, .tail_s = 0};
  const double beyond = merged_step_s(forward, backward) - 0.030;
  EXPECT_GT(beyond, 2 * a);  // more than two pairs: the links are shared
  EXPECT_NEAR(estimate_plan(model, plan, slow, cost).ep_comm_s, 2 * (0.5 * beyond + 0.5 * 4 * a), 1e-12);
}

// FixedCostModel's ops with expert GEMMs that take `load` times the
// balanced ones: 4 ms more per unit of load in the forward, 3 + 5 ms in the
// backward's input and weight halves.
class LoadedCostModel final : public CostModel {
 public:
  OpCost forward(const StageSlice& s, const platforms::GpuSpec& g) const override {
    return fixed_.forward(s, g);
  }
  OpCost backward(const StageSlice& s, const platforms::GpuSpec& g) const override {
    return fixed_.backward(s, g);
  }
  OpCost backward_input(const StageSlice& s, const platforms::GpuSpec& g) const override {
    return fixed_.backward_input(s, g);
  }
  OpCost backward_weight(const StageSlice& s, const platforms::GpuSpec& g) const override {
    return fixed_.backward_weight(s, g);
  }
  OpCost optimizer(double p, const platforms::GpuSpec& g) const override { return fixed_.optimizer(p, g); }
  double moe_load_extra_s(PipeOpKind kind, double load, const platforms::GpuSpec&) const override {
    const double per = kind == PipeOpKind::forward           ? 0.004
                       : kind == PipeOpKind::backward_input  ? 0.003
                       : kind == PipeOpKind::backward_weight ? 0.005
                                                             : 0.008;
    return per * (load - 1);
  }

 private:
  testing::FixedCostModel fixed_{0.010, 0.020};
};

// Measured routing on 8 experts, 3 : 1 : 1 : 1 : 1 : 1 : 0 : 0 in both MoE
// layers: at ep 8 the busiest rank's load factor is 3, so each MoE layer's
// forward takes 2 x 4 ms more and its backward 2 x (3 + 5) ms more on it,
// and its all-to-all moves ((n - 2) f + n) / (2 (n - 1)) = 26 / 14 of the
// balanced bytes (rank i sends j B (f_i + f_j) / n). m = 2 micro-batches,
// pp 1: the iteration grows by m (F + B) of each.
TEST(ExpertEstimate, SkewedRoutingRunsEachMoeLayerAtItsBusiestRanksPace) {
  ModelSpec model = small_moe_model(2, 8, 2, 1024);
  const auto cluster = testing::uniform_cluster(2, 4, 100e9, 0);
  ParallelPlan plan;
  plan.dp = 8;
  plan.ep = 8;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 16;
  const LoadedCostModel cost;
  const PlanEstimate balanced = estimate_plan(model, plan, cluster, cost);
  const ExpertExchangeEstimate exchange = expert_exchange_estimate(model, plan, cluster, 0);
  ASSERT_GT(exchange.transfer_s, 0);
  ASSERT_LE(exchange.transfer_s, exchange.pass_pair_s);

  model.moe.routing.kind = RoutingKind::measured;
  model.moe.routing.measured = {{.layer = -1, .tokens = {3, 1, 1, 1, 1, 1, 0, 0}}};
  const RoutingSkewEstimate skew(model, plan);
  ASSERT_TRUE(skew.active());
  EXPECT_DOUBLE_EQ(skew.busiest(0), 3);
  EXPECT_DOUBLE_EQ(skew.busiest(1), 3);
  const double factor = 26.0 / 14.0;
  const PlanEstimate skewed = estimate_plan(model, plan, cluster, cost);
  EXPECT_NEAR(skewed.compute_s - balanced.compute_s, 2 * 2 * (2 * 0.004 + 2 * 0.003 + 2 * 0.005), 1e-12);
  EXPECT_NEAR(skewed.ep_comm_s - balanced.ep_comm_s, 2 * 2 * 2 * exchange.transfer_s * (factor - 1), 1e-12);
  EXPECT_NEAR((skewed.iteration_s - skewed.dp_exposed_s - skewed.optimizer_s) -
                  (balanced.iteration_s - balanced.dp_exposed_s - balanced.optimizer_s),
              2 * 2 * 0.024 + 8 * exchange.transfer_s * (factor - 1), 1e-12);

  // Merged F&B steps (moe_a2a_overlap) run the same per piece: a forward
  // piece of 5 ms + 2 x 4 ms, its all-to-all one skewed pass pair.
  const MergedOp merged = merged_op(model, plan, cost, cluster.gpu_of(0), {.layers = 2, .first_layer = 0},
                                    PipeOpKind::forward, exchange, skew, 0);
  ASSERT_EQ(merged.pieces.size(), 2u);
  for (const MergedPiece& piece : merged.pieces) {
    EXPECT_NEAR(piece.compute_s, 0.005 + 0.008, 1e-12);
    EXPECT_NEAR(piece.a2a_s, exchange.pass_pair_s + exchange.transfer_s * (factor - 1), 1e-12);
  }

  // deepep: the busiest GPU receives at most f times the balanced bytes.
  plan.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_DOUBLE_EQ(RoutingSkewEstimate(model, plan).exchange_factor({.layers = 2, .first_layer = 0}), 3);
  // A capacity factor pads every expert to one load: nothing changes.
  plan.moe_dispatcher = MoeDispatcher::all_to_all;
  model.moe.dropless = false;
  model.moe.capacity_factor = 1.25;
  EXPECT_FALSE(RoutingSkewEstimate(model, plan).active());
  EXPECT_EQ(estimate_plan(model, plan, cluster, cost).compute_s, balanced.compute_s);
}

// tp 4 x dp 4 on one node of 16 GPUs (100 GB/s links, no hop latency), 2
// MoE layers, m 2: ep 2 with expert TP 2 runs, per MoE layer and pass, an
// all-gather and a reduce-scatter of 2 S bytes over 2 GPUs (S = 2 (s / tp)
// k h), each one ring step of 2 S / 2 bytes plus a launch; expert TP 1 runs
// neither, and the dense TP collectives are the same (the MoE layers' MLP
// pair is gone in both). The TP term differs by m x 2 passes x 2 layers x
// the pair.
TEST(ExpertEstimate, ExpertTpBetweenOneAndTpAddsItsGatherAndScatterPerMoeLayer) {
  const ModelSpec model = small_moe_model(2, 8, 2, 1024);
  const auto cluster = testing::uniform_cluster(1, 16, 100e9, 0);
  ParallelPlan plan;
  plan.tp = 4;
  plan.dp = 4;
  plan.ep = 2;
  plan.etp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 8;
  const testing::FixedCostModel cost(0.010, 0.020);
  const double s = 2.0 * model.seq_len / 4 * model.moe.top_k * model.hidden;
  EXPECT_DOUBLE_EQ(expert_tp_collective_bytes(model, plan), 2 * s);
  const double launch = cluster.collectives.launch_latency_s;
  const double pair = 2 * (2 * s / (2 * 100e9) + launch);
  ParallelPlan one = plan;
  one.etp = 1;
  EXPECT_NEAR(estimate_plan(model, plan, cluster, cost).tp_comm_s -
                  estimate_plan(model, one, cluster, cost).tp_comm_s,
              2 * 2 * 2 * pair, 1e-12);
  // The EP group is the stage's first in Megatron's order: GPUs 0 and 2.
  EXPECT_EQ(expert_parallel_groups(plan, 0).front(), (std::vector<int>{0, 2}));
  EXPECT_GT(expert_exchange_estimate(model, plan, cluster, 0).nvlink_bytes, 0);
}

}  // namespace
}  // namespace trainsim::workloads
