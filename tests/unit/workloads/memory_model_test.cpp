// The memory model: bytes per parameter by ZeRO stage, what each GPU keeps
// resident, and the static estimate's walk of each schedule (micro-batches in
// flight per stage against each schedule's reference count, peak bytes).
#include <gtest/gtest.h>

#include "workloads/activation_memory.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

ParallelPlan plan_of(int dp, int zero, int grad_bytes = 2) {
  ParallelPlan p{.dp = dp, .micro_batch_size = 1, .global_batch_size = dp};
  p.zero_stage = zero;
  p.grad_bytes = grad_bytes;
  return p;
}

double per_parameter(const ParallelPlan& plan) {
  return bytes_per_parameter(plan).total();
}

TEST(MemoryModel, BytesPerParameterFollowTheZeroPaper) {
  for (int d : {1, 2, 8, 64}) {
    EXPECT_DOUBLE_EQ(per_parameter(plan_of(d, 0)), 16) << d;
    EXPECT_DOUBLE_EQ(per_parameter(plan_of(d, 1)), 4 + 12.0 / d) << d;
    EXPECT_DOUBLE_EQ(per_parameter(plan_of(d, 2)), 2 + 14.0 / d) << d;
    EXPECT_DOUBLE_EQ(per_parameter(plan_of(d, 3)), 16.0 / d) << d;
  }
  const auto b = bytes_per_parameter(plan_of(8, 0));
  EXPECT_EQ(b[MemoryKind::weights], 2);
  EXPECT_EQ(b[MemoryKind::gradients], 2);
  EXPECT_EQ(b[MemoryKind::optimizer], 12);
  EXPECT_EQ(b[MemoryKind::activations], 0);
}

// Megatron's distributed-optimizer table: fp32 gradients, 18 plain, 6 + 12/d.
TEST(MemoryModel, BytesPerParameterMatchMegatronWithFp32Gradients) {
  EXPECT_DOUBLE_EQ(per_parameter(plan_of(8, 0, 4)), 18);
  EXPECT_DOUBLE_EQ(per_parameter(plan_of(8, 1, 4)), 6 + 12.0 / 8);
}

// ZeRO shards over every GPU that holds the same parameters: dp x cp.
TEST(MemoryModel, ContextParallelRanksShareTheShards) {
  auto plan = plan_of(2, 3);
  plan.cp = 4;
  EXPECT_DOUBLE_EQ(per_parameter(plan), 16.0 / 8);
}

// Hybrid sharding spreads a shard over dp_shard GPUs only: each GPU keeps
// 16 / dp_shard bytes per parameter, whatever the number of replicas.
TEST(MemoryModel, HybridShardingShardsOverTheShardGroupOnly) {
  auto plan = plan_of(32, 3);
  plan.dp_shard = 8;
  EXPECT_DOUBLE_EQ(per_parameter(plan), 16.0 / 8);
  EXPECT_DOUBLE_EQ(bytes_per_parameter(plan)[MemoryKind::optimizer], 12.0 / 8);
  plan.dp_shard = 32;
  EXPECT_DOUBLE_EQ(per_parameter(plan), 16.0 / 32);
}

TEST(MemoryModel, ResidentMemoryIsTheStageParametersTimesTheirBytes) {
  const auto model = *find_model_preset("gpt3-2.7b");
  ParallelPlan plan{.dp = 4, .tp = 2, .pp = 4, .micro_batch_size = 1, .global_batch_size = 16};
  plan.zero_stage = 1;
  const GpuMemoryModel memory(model, plan);
  // A middle stage: its 8 layers over 2 GPUs.
  const double p1 = 8 * model.layer_parameters() / 2;
  EXPECT_DOUBLE_EQ(memory.parameters(1), p1);
  EXPECT_DOUBLE_EQ(memory.resident(1)[MemoryKind::weights], 2 * p1);
  EXPECT_DOUBLE_EQ(memory.resident(1)[MemoryKind::gradients], 2 * p1);
  EXPECT_DOUBLE_EQ(memory.resident(1)[MemoryKind::optimizer], 12 * p1 / 4);
  // The first stage adds the embedding; the last the output layer's copy of
  // the tied word embeddings (Megatron), not the position table.
  EXPECT_DOUBLE_EQ(memory.parameters(0), p1 + model.embedding_parameters() / 2);
  EXPECT_DOUBLE_EQ(memory.parameters(3), p1 + double(model.vocab) * model.hidden / 2);
  EXPECT_DOUBLE_EQ(memory.parameters(0), stage_parameters_per_gpu(model, plan, 0));
}

// Walk the plan's schedule with a GPT-3 1.3B plan of p stages and m
// micro-batches.
MemoryEstimate estimate(ScheduleKind kind, int p, int m, int v = 1, Recompute r = Recompute::none) {
  const auto model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.pp = p, .micro_batch_size = 1, .global_batch_size = m};
  plan.schedule = kind;
  plan.virtual_stages = v;
  plan.recompute = r;
  ScheduleOptions options;
  options.virtual_stages = v;
  return estimate_memory(model, plan, make_schedule(kind, p, m, options));
}

std::vector<int> held(const MemoryEstimate& e) {
  std::vector<int> counts;
  for (const auto& s : e.stages)
    counts.push_back(s.max_forwards_held);
  return counts;
}

TEST(MemoryModel, OneFOneBStageHoldsMinOfPMinusSAndM) {
  for (int p : {2, 4, 8})
    for (int m : {1, 2, 4, 8, 16}) {
      const auto e = estimate(ScheduleKind::one_f_one_b, p, m);
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(e.stages[s].max_forwards_held, std::min(p - s, m)) << p << " " << m << " " << s;
    }
}

TEST(MemoryModel, GPipeHoldsEveryMicroBatchOnEveryStage) {
  for (int p : {2, 4})
    for (int m : {1, 4, 16})
      EXPECT_EQ(held(estimate(ScheduleKind::gpipe, p, m)), std::vector<int>(p, m));
}

TEST(MemoryModel, ZeroBubbleH1HoldsAsOneFOneBAndH2HoldsTwoPMinusOne) {
  for (int p : {2, 4, 8})
    for (int m : {2, 8, 16}) {
      const auto h1 = estimate(ScheduleKind::zb_h1, p, m), h2 = estimate(ScheduleKind::zb_h2, p, m);
      for (int s = 0; s < p; ++s) {
        EXPECT_EQ(h1.stages[s].max_forwards_held, std::min(p - s, m)) << p << " " << m << " " << s;
        EXPECT_EQ(h2.stages[s].max_forwards_held, std::min(2 * (p - s) - 1, m)) << p << " " << m << " " << s;
      }
    }
}

// Megatron's interleaved schedule: rank r runs w = min(2(p-r-1) + (v-1)p, mv)
// warm-up chunk forwards and holds one more in the steady state.
TEST(MemoryModel, InterleavedRankHoldsItsWarmUpPlusOneChunkForwards) {
  for (int p : {2, 4, 8})
    for (int v : {2, 3})
      for (int m : {p, 2 * p, 4 * p}) {
        const auto e = estimate(ScheduleKind::interleaved_one_f_one_b, p, m, v);
        for (int r = 0; r < p; ++r)
          EXPECT_EQ(e.stages[r].max_forwards_held, std::min(2 * (p - r - 1) + (v - 1) * p + 1, m * v))
              << p << " " << v << " " << m << " " << r;
      }
}

// ZB-V caps every rank at 2p chunk forwards (1F1B's p micro-batches of the
// first stage, in half-size chunks), and reaches the cap with enough
// micro-batches; DualPipe-V holds one chunk forward more.
TEST(MemoryModel, VShapedSchedulesHoldAboutPMicroBatches) {
  for (int p : {2, 4, 6, 8})
    for (int m : {2 * p, 4 * p}) {
      const auto zbv = held(estimate(ScheduleKind::zb_v, p, m, 2));
      EXPECT_EQ(*std::max_element(zbv.begin(), zbv.end()), 2 * p) << p << " " << m;
      EXPECT_EQ(held(estimate(ScheduleKind::dualpipe_v, p, m, 2)), std::vector<int>(p, 2 * p + 1)) << p;
    }
  for (int p : {4, 6, 8}) {
    const auto few = held(estimate(ScheduleKind::zb_v, p, 2, 2));
    EXPECT_LE(*std::max_element(few.begin(), few.end()), 2 * p);
  }
}

// DualPipe (deepseek-ai/DualPipe README, "Activation Per Device": PP + 1):
// every rank holds at most p + 1 forwards of its whole-stage chunks, where
// 1F1B's first stage holds p.
TEST(MemoryModel, DualPipeHoldsPPlusOneStageForwardsOnEveryRank) {
  for (int p : {2, 4, 6, 8})
    for (int m : {2 * p, 4 * p})
      EXPECT_EQ(held(estimate(ScheduleKind::dualpipe, p, m, 2)), std::vector<int>(p, p + 1)) << p << " " << m;
}

// "DualPipe requires keeping two copies of the model parameters" (DeepSeek-V3
// report, 3.2.1): rank r holds stages r and p - 1 - r, twice 1F1B's layers
// (and weights, gradients and optimizer state), where DualPipe-V's two
// half-size chunks hold 1F1B's. The pair (r, p - 1 - r) holds the same
// parameters; ranks 0 and p - 1 each hold the embedding and the output
// layer, which share the tied weight (no extra copy).
TEST(MemoryModel, DualPipeKeepsTwiceTheParametersAndOptimizerStateOfDualPipeV) {
  const auto model = *find_model_preset("gpt3-2.7b");
  ASSERT_TRUE(model.tied_embeddings);
  ParallelPlan plan{.dp = 4, .tp = 2, .pp = 4, .micro_batch_size = 1, .global_batch_size = 32};
  plan.zero_stage = 1;
  const GpuMemoryModel one_f_one_b(model, plan);
  plan.virtual_stages = 2;
  plan.schedule = ScheduleKind::dualpipe_v;
  const GpuMemoryModel dualpipe_v(model, plan);
  plan.schedule = ScheduleKind::dualpipe;
  const GpuMemoryModel dualpipe(model, plan);
  const double p1 = 8 * model.layer_parameters() / 2;  // a middle stage's 8 layers over tp 2
  for (int r : {1, 2}) {
    EXPECT_DOUBLE_EQ(one_f_one_b.parameters(r), p1) << r;
    EXPECT_DOUBLE_EQ(dualpipe_v.parameters(r), p1) << r;
    EXPECT_DOUBLE_EQ(dualpipe.parameters(r), 2 * p1) << r;
    for (const MemoryKind kind : {MemoryKind::weights, MemoryKind::gradients, MemoryKind::optimizer})
      EXPECT_DOUBLE_EQ(dualpipe.resident(r)[kind], 2 * dualpipe_v.resident(r)[kind]) << r;
    EXPECT_DOUBLE_EQ(dualpipe.parameters(r), stage_parameters_per_gpu(model, plan, r));
  }
  const double tied_copy = double(model.vocab) * model.hidden / 2;
  for (int r : {0, 3})
    EXPECT_DOUBLE_EQ(dualpipe.parameters(r), 2 * p1 + model.embedding_parameters() / 2) << r;
  EXPECT_DOUBLE_EQ(dualpipe.parameters(0), one_f_one_b.parameters(0) + one_f_one_b.parameters(3) - tied_copy);
  // Each stage's layers are held by exactly two ranks.
  double layers_held = 0;
  for (int r = 0; r < 4; ++r)
    layers_held += dualpipe.layer_parameters_on(r);
  EXPECT_DOUBLE_EQ(layers_held, 2 * 32 * model.layer_parameters() / 2);
}

// BPipe: an evictor keeps at most K + 1 (K = ceil((p + 1) / 2), plus the
// micro-batch being reloaded) where 1F1B keeps p - s; its acceptor takes
// what is away. The pair's most loaded GPU drops from 1F1B's p - s.
TEST(MemoryModel, BPipeBalancesEachStagePair) {
  for (int p : {4, 6, 8})
    for (int m : {8, 16, 32}) {
      const int k = bpipe_resident_limit(p);
      const auto bpipe = held(estimate(ScheduleKind::bpipe, p, m));
      const auto plain = held(estimate(ScheduleKind::one_f_one_b, p, m));
      for (int s = 0; s < p / 2; ++s) {
        const int partner = p - 1 - s;
        EXPECT_EQ(bpipe[s], std::min(plain[s], k + 1)) << p << " " << m << " " << s;
        EXPECT_EQ(bpipe[partner], plain[partner] + std::max(0, plain[s] - k)) << p << " " << m << " " << s;
        EXPECT_LE(std::max(bpipe[s], bpipe[partner]), std::max(plain[s], plain[partner]));
      }
    }
  // p = 8: 1F1B's 8 7 6 5 4 3 2 1 becomes 6 6 6 5 4 4 4 4.
  EXPECT_EQ(held(estimate(ScheduleKind::bpipe, 8, 16)), (std::vector<int>{6, 6, 6, 5, 4, 4, 4, 4}));
}

// 1F1B, no recomputation, p = 4: stage 0's peak is its resident bytes plus
// p forwards of its layers and the embedding, during the p-th forward.
TEST(MemoryModel, OneFOneBPeakIsResidentPlusPStagesOfActivations) {
  const auto model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.pp = 4, .micro_batch_size = 2, .global_batch_size = 16};
  const auto e = estimate_memory(model, plan, make_one_f_one_b(4, 8));
  const GpuMemoryModel memory(model, plan);
  const double per_micro_batch =
      stage_activation_bytes(model, plan, 6) + embedding_activation_bytes(model, plan);
  EXPECT_DOUBLE_EQ(memory.stored_activations(0), per_micro_batch);
  EXPECT_NEAR(e.stages[0].peak_bytes, memory.resident(0).total() + 4 * per_micro_batch, 1);
  EXPECT_NEAR(e.stages[0].at_peak[MemoryKind::activations], 4 * per_micro_batch, 1);
  EXPECT_EQ(e.stages[0].peak_op, "F3");
  EXPECT_EQ(e.worst_stage(), 0);
  // The last stage holds one micro-batch, with the logits' fp32 copy.
  EXPECT_NEAR(e.stages[3].at_peak[MemoryKind::activations],
              stage_activation_bytes(model, plan, 6) + logits_activation_bytes(model, plan), 1);
}

// Full recomputation keeps 2 s b h per layer and rebuilds one layer during
// each backward: stage 0 of two peaks as its first backward starts, with two
// micro-batches stored.
TEST(MemoryModel, FullRecomputationPeakAddsOneRebuiltLayer) {
  const auto model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.pp = 2, .micro_batch_size = 1, .global_batch_size = 8};
  plan.recompute = Recompute::full;
  const auto e = estimate_memory(model, plan, make_one_f_one_b(2, 8));
  const GpuMemoryModel memory(model, plan);
  const double stored = memory.stored_activations(0);
  EXPECT_DOUBLE_EQ(stored, 12 * 2.0 * 2048 * 2048 + 2048.0 * 2048);
  EXPECT_NEAR(e.stages[0].at_peak[MemoryKind::activations],
              2 * stored + recompute_workspace_bytes(model, plan), 1);
  EXPECT_EQ(e.stages[0].peak_op, "B0");
}

// Zero-bubble: B frees all but the weight gradient's inputs, W the rest;
// after the iteration nothing is left.
TEST(MemoryModel, SplitBackwardFreesInTwoSteps) {
  const auto model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.pp = 4, .micro_batch_size = 1, .global_batch_size = 8};
  plan.schedule = ScheduleKind::zb_h1;
  const GpuMemoryModel memory(model, plan);
  const auto f = memory.op_memory(PipeOpKind::forward, 1);
  const auto b = memory.op_memory(PipeOpKind::backward_input, 1);
  const auto w = memory.op_memory(PipeOpKind::backward_weight, 1);
  EXPECT_DOUBLE_EQ(f.at_end.total() + b.at_start.total() + b.at_end.total() + w.at_end.total(), 0);
  EXPECT_DOUBLE_EQ(-w.at_end.total(), 6 * layer_weight_gradient_hold_bytes(model, plan));
  EXPECT_LT(-w.at_end.total(), f.at_end.total());
}

// ZeRO-3 / FSDP adds the gathered unit and the one prefetched, and the
// unsharded gradients of two units, to an op's peak.
TEST(MemoryModel, FsdpPeakAddsTwoGatheredUnits) {
  const auto model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.dp = 8, .pp = 1, .micro_batch_size = 1, .global_batch_size = 8};
  plan.zero_stage = 3;
  const auto e = estimate_memory(model, plan, make_one_f_one_b(1, 1));
  const GpuMemoryModel memory(model, plan);
  const double largest = memory.piece_parameters(0, 0);  // the layer with the embedding
  EXPECT_NEAR(e.stages[0].at_peak[MemoryKind::buffers], 2 * 2 * largest + 2 * 2 * largest, 1);
  EXPECT_NEAR(e.stages[0].at_peak[MemoryKind::weights], 2 * memory.parameters(0) / 8, 1);
}

}  // namespace
}  // namespace trainsim::workloads

namespace trainsim::workloads {
namespace {

// A virtual stage of no transformer layer holds the embedding (first) or the
// output layer and loss (last): their weights, gradients, optimizer state
// and stored activations (a probe once read 0.03 GiB for the first stage of
// stage_layers [0, 8, 8, 8], the embedding's state left out).
TEST(MemoryModel, AStageOfNoLayerHoldsTheEmbeddingOrTheLossAndItsState) {
  const ModelSpec model = *find_model_preset("gpt3-1.3b");
  ParallelPlan plan{.dp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 8};
  plan.stage_layers = {0, 8, 8, 8};
  const GpuMemoryModel first(model, plan);
  EXPECT_EQ(first.pieces(0), 1);
  EXPECT_DOUBLE_EQ(first.parameters(0), model.embedding_parameters());
  EXPECT_DOUBLE_EQ(first.resident(0).total(), 16 * model.embedding_parameters());
  EXPECT_DOUBLE_EQ(first.stored_activations(0), embedding_activation_bytes(model, plan));
  const auto estimate = estimate_memory(model, plan, make_one_f_one_b(4, 8));
  EXPECT_GE(estimate.stages[0].peak_bytes,
            16 * model.embedding_parameters() + 4 * embedding_activation_bytes(model, plan));
  EXPECT_GT(estimate.stages[0].peak_bytes, 1.5 * (1 << 30));

  plan.stage_layers = {8, 8, 8, 0};
  const GpuMemoryModel last(model, plan);
  EXPECT_DOUBLE_EQ(last.parameters(3), last.piece_parameters(3, 0));
  EXPECT_GE(last.parameters(3), model.logits_parameters());
  EXPECT_DOUBLE_EQ(last.stored_activations(3), logits_activation_bytes(model, plan));
}

}  // namespace
}  // namespace trainsim::workloads
