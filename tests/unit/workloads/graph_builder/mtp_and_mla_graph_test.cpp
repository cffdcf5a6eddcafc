// Multi-token prediction (model.mtp_depth) and multi-head latent attention
// in the task graph, the cost models and the memory model: the MTP modules
// ride with the last stage's logits (FLOPs, kernels, TP collectives, EP
// all-to-alls, parameters, activations), and the graph's model FLOPs add up
// to the analytic iteration total with both.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <vector>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

// DeepSeek-V2-Lite's attention and experts at a tenth of the depth: 4
// layers (the first dense), 64 experts top-6 + 2 shared, MLA, one MTP
// module.
ModelSpec small_deepseek(int mtp_depth = 1) {
  ModelSpec m = *find_model_preset("deepseek-v2-lite");
  m.layers = 4;
  m.seq_len = 1024;
  m.vocab = 16000;
  m.mtp_depth = mtp_depth;
  return m;
}

ParallelPlan plan_of(int dp, int pp, int ep, int micro_batches) {
  return ParallelPlan{.dp = dp,
                      .pp = pp,
                      .ep = ep,
                      .micro_batch_size = 1,
                      .global_batch_size = micro_batches * dp,
                      .zero_stage = 1};
}

TaskGraph build(const ModelSpec& m, const ParallelPlan& plan) {
  return testing::iteration_on_one_node(m, plan);
}

double graph_model_flops(const TaskGraph& g) {
  double flops = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    flops += g[v].model_flops;
  return flops;
}

TEST(MultiTokenPrediction, ModuleFlopsAreItsProjectionLayerAndOutputHead) {
  const ModelSpec m = small_deepseek();
  const double tokens = 1024, h = 2048;
  EXPECT_DOUBLE_EQ(m.mtp_forward_flops(1),
                   2 * tokens * 2 * h * h + m.layer_forward_flops(1, 3) + m.logits_forward_flops(1));
  ModelSpec none = m;
  none.mtp_depth = 0;
  EXPECT_DOUBLE_EQ(m.iteration_model_flops(8) - none.iteration_model_flops(8), 3 * m.mtp_forward_flops(8));
  // Two modules cost twice one.
  EXPECT_DOUBLE_EQ(small_deepseek(2).mtp_forward_flops(1), 2 * m.mtp_forward_flops(1));
}

TEST(MultiTokenPrediction, TaskGraphModelFlopsSumToTheAnalyticTotalWithMlaAndMtp) {
  for (int mtp : {0, 1, 2}) {
    const ModelSpec m = small_deepseek(mtp);
    const ParallelPlan plan = plan_of(4, 2, 4, 4);
    const TaskGraph g = build(m, plan);
    EXPECT_NEAR(graph_model_flops(g) / m.iteration_model_flops(plan.global_batch_size), 1.0, 1e-12)
        << "mtp " << mtp;
  }
}

TEST(MultiTokenPrediction, LastStageRunsTheModulesAllToAllsAndTpCollectives) {
  const ModelSpec m = small_deepseek();
  const StageSlice last{.layers = 2, .first_layer = 2, .embedding = false, .logits = true};
  const StageSlice first{.layers = 2, .first_layer = 0, .embedding = true, .logits = false};
  EXPECT_EQ(transformer_layers_of(m, last), 3);
  EXPECT_EQ(transformer_layers_of(m, first), 2);
  // Layers 1..3 are MoE; the MTP layer is a MoE layer as the last one is.
  EXPECT_EQ(moe_layers_of(m, last), 3);
  EXPECT_EQ(moe_layers_of(m, first), 1);

  // EP all-to-alls: 4 passes per MoE layer and micro-batch, so the last
  // stage's EP groups run 4 x 3 per micro-batch, the first's 4 x 1.
  const ParallelPlan plan = plan_of(4, 2, 4, 2);
  const TaskGraph g = build(m, plan);
  int first_passes = 0, last_passes = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm != CommKind::ep)
      continue;
    (t.stage == 0 ? first_passes : last_passes) += t.fold;
  }
  EXPECT_EQ(first_passes, 4 * 1 * 2);
  EXPECT_EQ(last_passes, 4 * 3 * 2);
}

TEST(MultiTokenPrediction, LastStageHoldsTheModulesAndAnEmbeddingCopy) {
  const ModelSpec m = small_deepseek();
  const ParallelPlan plan = plan_of(4, 2, 4, 2);
  ModelSpec none = m;
  none.mtp_depth = 0;
  // Parameters the optimizer and the gradient reduction see.
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(m, plan, 1) - stage_parameters_per_gpu(none, plan, 1),
                   (m.mtp_parameters() - m.mtp_expert_parameters()) + m.mtp_expert_parameters() / 4);
  EXPECT_DOUBLE_EQ(stage_parameters_per_gpu(m, plan, 0), stage_parameters_per_gpu(none, plan, 0));
  EXPECT_DOUBLE_EQ(
      stage_expert_parameters_per_gpu(m, plan, 1) - stage_expert_parameters_per_gpu(none, plan, 1),
      m.mtp_expert_parameters() / 4);
  // Memory: the same plus the embedding Megatron builds on the last stage
  // for the modules' next-token inputs.
  const GpuMemoryModel with(m, plan), without(none, plan);
  EXPECT_DOUBLE_EQ(with.parameters(1) - without.parameters(1),
                   m.mtp_parameters() - m.mtp_expert_parameters() + m.mtp_expert_parameters() / 4 +
                       double(m.vocab) * m.hidden);
  // Activations: the module's layer (MoE), its own inputs (8 s b h) and
  // its output head's.
  const double sbh = 1024.0 * 2048;
  EXPECT_DOUBLE_EQ(mtp_activation_bytes(m, plan), layer_activation_bytes(m, plan, plan.recompute, true) +
                                                      8 * sbh + logits_activation_bytes(m, plan));
  EXPECT_DOUBLE_EQ(with.stored_activations(1) - without.stored_activations(1), mtp_activation_bytes(m, plan));
}

TEST(MultiTokenPrediction, PerOpCostAddsEachModulesKernelsLayerAndOutputHead) {
  const ModelSpec m = small_deepseek();
  ModelSpec none = m;
  none.mtp_depth = 0;
  const ParallelPlan plan = plan_of(1, 1, 1, 1);
  const auto gpu = *platforms::find_gpu("H100-SXM");
  const PerOpCostModel with(m, plan), without(none, plan);
  const StageSlice all{.layers = 4, .first_layer = 0, .embedding = true, .logits = true};
  const StageSlice last_layer{.layers = 1, .first_layer = 3, .embedding = false, .logits = false};
  const StageSlice head_only{.layers = 0, .first_layer = 4, .embedding = false, .logits = true};
  const double module = with.forward(all, gpu).duration_s - without.forward(all, gpu).duration_s;
  // The module's own kernels as one pass: their device time, but no less
  // than the host needs to launch them.
  double own = 0;
  int kernels = 0;
  const auto& profile = platforms::efficiency_profile_for(gpu.name);
  for (const auto& op : mtp_ops(m, with.setup()))
    if (op.pass == OpPass::forward) {
      own += time_op(op, gpu, profile).duration_s;
      kernels += op.kernels;
    }
  own = std::max(own, kernels * profile.host_overhead_per_kernel_s);
  EXPECT_NEAR(module,
              own + without.forward(last_layer, gpu).duration_s + without.forward(head_only, gpu).duration_s,
              1e-12);
  // Model FLOPs: the analytic module's.
  EXPECT_NEAR(with.forward(all, gpu).model_flops - without.forward(all, gpu).model_flops,
              m.mtp_forward_flops(1), 1.0);
}

TEST(MultiTokenPrediction, ContextParallelismIsRefusedAsMegatronDoes) {
  const ModelSpec m = small_deepseek();
  ParallelPlan plan = plan_of(2, 1, 1, 2);
  plan.cp = 2;
  bool found = false;
  for (const auto& p : plan_problems(m, plan))
    found = found || (p.key == "plan.context_parallel" && p.message.find("mtp_depth") != std::string::npos);
  EXPECT_TRUE(found);
}

TEST(MlaGraph, MlaWithATpThatDoesNotDivideTheHeadsIsRefusedNamingMla) {
  const ModelSpec m = small_deepseek(0);  // 16 heads
  ParallelPlan plan = plan_of(1, 1, 1, 1);
  plan.tp = 3;
  bool found = false;
  for (const auto& p : plan_problems(m, plan))
    found = found || (p.key == "plan.tp" && p.message.find("latent attention") != std::string::npos);
  EXPECT_TRUE(found);
}

TEST(MlaGraph, SequenceParallelGathersTheLatentsBeforeAttentionNotTheHiddenState) {
  // DeepSeek-V2-Lite's shape without query compression: before attention
  // the TP group gathers the hidden state (for q_proj), the key/value
  // latent and the rotary key, w = 2048 + 512 + 64 per token; before the
  // MLP the hidden state, h = 2048. Reduce-scatters move h each.
  const ModelSpec m = small_deepseek(0);
  ParallelPlan plan = plan_of(1, 1, 1, 1);
  plan.tp = 2;
  plan.sequence_parallel = true;
  const TaskGraph g = build(m, plan);
  const double tokens = 1024, h = 2048, w = 2048 + 512 + 64;
  // One micro-batch: the forward's folded all-gather and reduce-scatter,
  // then the backward's, in the order the builder adds them.
  std::vector<double> gathers, scatters;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm == CommKind::tp)
      (t.op == CollectiveOp::all_gather ? gathers : scatters).push_back(t.bytes * t.fold);
  }
  ASSERT_EQ(gathers.size(), 2u);
  ASSERT_EQ(scatters.size(), 2u);
  const double gathered = gathers[0], gathered_back = gathers[1];
  const double scattered = scatters[0], scattered_back = scatters[1];
  const double layers = 4;
  EXPECT_DOUBLE_EQ(gathered, 2 * tokens * (w + h) * layers);
  EXPECT_DOUBLE_EQ(scattered, 2 * tokens * (h + h) * layers);
  EXPECT_DOUBLE_EQ(gathered_back, 2 * tokens * (h + h) * layers);
  EXPECT_DOUBLE_EQ(scattered_back, 2 * tokens * (w + h) * layers);
}

}  // namespace
}  // namespace trainsim::workloads
