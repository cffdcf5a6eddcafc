// GPU memory under imbalanced expert routing (model.moe.routing, dropless,
// ep > 1): each GPU keeps its EP rank's load factor times the routed-copy
// activations of each MoE layer (the dispatch's receive buffer, the expert
// MLP intermediates, the combine's buffer), per micro-batch in flight; the
// static estimate reports each stage's busiest EP rank; the task graph's
// memory events charge each GPU its own; a capacity factor caps it at the
// balanced figure; balanced routing changes nothing.
#include <gtest/gtest.h>

#include <boost/graph/adjacency_list.hpp>
#include <map>

#include "support/small_moe.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

// 4 MoE layers (hidden 1024, SwiGLU, 4 experts of expert_ffn_hidden 2048,
// top-1) on ep 4: rank r holds expert r. The measured loads 6:2:0:0 give
// load factors 3, 1, 0, 0 in every layer.
ModelSpec moe_with(RoutingKind kind) {
  ModelSpec m = testing::small_moe_model(4, 4, 1, 2048);
  m.moe.routing.kind = kind;
  if (kind == RoutingKind::measured)
    m.moe.routing.measured = {{.layer = -1, .tokens = {6, 2, 0, 0}}};
  return m;
}

// pp 2 (2 layers a stage), dp 4, ep 4, 4 micro-batches per pipeline under
// 1F1B: stage 0 holds 2 forwards at its peak.
ParallelPlan plan_pp2() {
  return ParallelPlan{.dp = 4, .pp = 2, .ep = 4, .micro_batch_size = 1, .global_batch_size = 16};
}

// By hand: a MoE layer keeps, per routed copy of each of its s b = 1,024
// tokens, the SwiGLU intermediates 6 x expert_ffn_hidden = 12 h bytes and
// the permuted input and expert output 4 h (h = 1024, BF16, tp 1): 16 h per
// copy, top_k = 1 copy a token when balanced. A GPU of load factor f keeps
// f copies a token: (f - 1) x 16 x 1024 x 1024 bytes more per layer and
// micro-batch, 32 MiB at f = 3.
constexpr double kPerLayerPerUnitLoad = 16.0 * 1024 * 1024;

TEST(ExpertImbalanceMemory, ALayerKeepsItsLoadFactorTimesTheRoutedCopies) {
  const ModelSpec m = moe_with(RoutingKind::balanced);
  const ParallelPlan plan = plan_pp2();
  const double balanced = layer_activation_bytes(m, plan, Recompute::none, true);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, plan, Recompute::none, true, 3.0) - balanced,
                   2 * kPerLayerPerUnitLoad);
  EXPECT_DOUBLE_EQ(balanced - layer_activation_bytes(m, plan, Recompute::none, true, 0.0),
                   kPerLayerPerUnitLoad);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, plan, Recompute::none, true, 1.0), balanced);
}

TEST(ExpertImbalanceMemory, EachEpRankStoresItsOwnLoadAndBalancedRoutingStoresTheSame) {
  const GpuMemoryModel skewed(moe_with(RoutingKind::measured), plan_pp2());
  const GpuMemoryModel balanced(moe_with(RoutingKind::balanced), plan_pp2());
  ASSERT_TRUE(skewed.imbalanced());
  EXPECT_FALSE(balanced.imbalanced());
  const double base = balanced.stored_activations(0);
  EXPECT_DOUBLE_EQ(balanced.stored_activations(0, 0), base);
  // Stage 0: 2 MoE layers; load factors 3, 1, 0, 0.
  EXPECT_DOUBLE_EQ(skewed.stored_activations(0, 0) - base, 2 * 2 * kPerLayerPerUnitLoad);
  EXPECT_DOUBLE_EQ(skewed.stored_activations(0, 1), base);
  EXPECT_DOUBLE_EQ(base - skewed.stored_activations(0, 2), 2 * kPerLayerPerUnitLoad);
  // No EP rank given: the balanced loads.
  EXPECT_DOUBLE_EQ(skewed.stored_activations(0), base);
}

TEST(ExpertImbalanceMemory, TheBusiestGpusPeakExceedsTheBalancedOneByItsExtraCopiesPerForwardHeld) {
  const ParallelPlan plan = plan_pp2();
  const auto schedule = make_one_f_one_b(2, 4);
  const MemoryEstimate skewed = estimate_memory(moe_with(RoutingKind::measured), plan, schedule);
  const MemoryEstimate balanced = estimate_memory(moe_with(RoutingKind::balanced), plan, schedule);
  ASSERT_EQ(skewed.stages.size(), 2u);
  // Stage 0 holds 2 forwards of 2 MoE layers at its peak, stage 1 one of 2.
  EXPECT_EQ(skewed.stages[0].max_forwards_held, 2);
  EXPECT_EQ(skewed.stages[0].ep_rank, 0);
  EXPECT_EQ(balanced.stages[0].ep_rank, -1);
  EXPECT_DOUBLE_EQ(skewed.stages[0].peak_bytes - balanced.stages[0].peak_bytes,
                   2 * 2 * 2 * kPerLayerPerUnitLoad);
  EXPECT_DOUBLE_EQ(skewed.stages[1].peak_bytes - balanced.stages[1].peak_bytes,
                   1 * 2 * 2 * kPerLayerPerUnitLoad);
  EXPECT_EQ(skewed.stages[0].peak_op, balanced.stages[0].peak_op);
}

TEST(ExpertImbalanceMemory, ACapacityFactorCapsEveryGpuAtTheBalancedMemory) {
  ModelSpec skewed = moe_with(RoutingKind::measured);
  ModelSpec balanced = moe_with(RoutingKind::balanced);
  for (ModelSpec* m : {&skewed, &balanced}) {
    m->moe.dropless = false;
    m->moe.capacity_factor = 1.25;
  }
  const ParallelPlan plan = plan_pp2();
  const auto schedule = make_one_f_one_b(2, 4);
  EXPECT_FALSE(GpuMemoryModel(skewed, plan).imbalanced());
  const MemoryEstimate a = estimate_memory(skewed, plan, schedule);
  const MemoryEstimate b = estimate_memory(balanced, plan, schedule);
  for (std::size_t s = 0; s < a.stages.size(); ++s) {
    EXPECT_EQ(a.stages[s].peak_bytes, b.stages[s].peak_bytes);
    EXPECT_EQ(a.stages[s].ep_rank, -1);
  }
  // The cap is the capacity's: 1.25 copies a token on every GPU, less than
  // the busiest dropless GPU's 3.
  const MemoryEstimate dropless = estimate_memory(moe_with(RoutingKind::measured), plan, schedule);
  EXPECT_LT(a.stages[0].peak_bytes, dropless.stages[0].peak_bytes);
}

// The task graph's memory events: the activations each GPU's forwards
// allocate, summed over the iteration (4 micro-batches of 2 layers a stage).
std::map<int, double> forward_activations(const TaskGraph& g) {
  std::map<int, double> per_gpu;
  for (const MemoryEvent& e : g.memory)
    if (e.kind == MemoryKind::activations && e.bytes > 0)
      per_gpu[e.gpu] += e.bytes;
  return per_gpu;
}

TEST(ExpertImbalanceMemory, EachGpusMemoryEventsCarryItsOwnEpRanksLoad) {
  const ParallelPlan plan = plan_pp2();
  const auto skewed =
      forward_activations(testing::iteration_on_one_node(moe_with(RoutingKind::measured), plan));
  const auto balanced =
      forward_activations(testing::iteration_on_one_node(moe_with(RoutingKind::balanced), plan));
  ASSERT_EQ(skewed.size(), static_cast<std::size_t>(plan.gpu_count()));
  const double load[] = {3, 1, 0, 0};
  for (const auto& [gpu, bytes] : skewed) {
    const int r = expert_parallel_rank_of(plan, gpu);
    EXPECT_DOUBLE_EQ(bytes - balanced.at(gpu), 4 * 2 * (load[r] - 1) * kPerLayerPerUnitLoad) << "GPU " << gpu;
  }
}

// BPipe (pp 4, one MoE layer a stage, 8 micro-batches): an evictor sends
// what its forward stored, its own EP rank's copies, and its acceptor
// holds them: the transfers carry (f - 1) x 16 MiB more than the balanced
// layer at load factor f, and the acceptor's busiest GPU (EP rank 0, f =
// 3) peaks 2 x 16 MiB above the balanced one per forward it holds, its
// own and the evicted ones alike.
TEST(ExpertImbalanceMemory, BPipeEvictsAndHoldsTheEvictorsOwnEpRanksActivations) {
  ParallelPlan plan{.dp = 4, .pp = 4, .ep = 4, .micro_batch_size = 1, .global_batch_size = 32};
  plan.schedule = ScheduleKind::bpipe;
  const ModelSpec skewed = moe_with(RoutingKind::measured);
  const ModelSpec balanced = moe_with(RoutingKind::balanced);
  const double layer = layer_activation_bytes(balanced, plan, Recompute::none, true);
  const double load[] = {3, 1, 0, 0};
  const TaskGraph g = testing::iteration_on_one_node(skewed, plan);
  int evicts = 0;
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g[id];
    if (t.kind != TaskKind::send || (t.transfer != TransferKind::evict && t.transfer != TransferKind::reload))
      continue;
    const int evictor = t.transfer == TransferKind::evict ? t.gpu : t.peer;
    evicts += t.transfer == TransferKind::evict;
    EXPECT_DOUBLE_EQ(t.bytes,
                     layer + (load[expert_parallel_rank_of(plan, evictor)] - 1) * kPerLayerPerUnitLoad)
        << "GPU " << evictor;
  }
  EXPECT_GT(evicts, 0);

  const auto schedule = make_bpipe(4, 8);
  const MemoryEstimate a = estimate_memory(skewed, plan, schedule);
  const MemoryEstimate b = estimate_memory(balanced, plan, schedule);
  const StageMemoryEstimate& acceptor = a.stages[3];
  ASSERT_GT(acceptor.max_forwards_held, 1);
  EXPECT_EQ(acceptor.ep_rank, 0);
  EXPECT_DOUBLE_EQ(acceptor.peak_bytes - b.stages[3].peak_bytes,
                   acceptor.max_forwards_held * 2 * kPerLayerPerUnitLoad);
}

}  // namespace
}  // namespace trainsim::workloads
