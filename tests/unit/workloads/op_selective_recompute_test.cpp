// recompute selective_op (torchtitan's per-op selective activation
// checkpointing, workloads/op_selective_recompute.hpp) on a small Llama
// block, against hand computations: the recomputed GEMMs (wk, wo, w3: the
// 2nd, 4th and 6th of the block's 7 aten.mm), their FLOPs, the bytes the
// policy stores, the TP all-gathers it repeats, and the plans it refuses.
#include <gtest/gtest.h>

#include <boost/range/iterator_range.hpp>
#include <map>
#include <string>

#include "support/small_llama.hpp"
#include "support/test_cluster.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/op_selective_recompute.hpp"
#include "workloads/plan_checks.hpp"

namespace trainsim::workloads {
namespace {

// A small Llama block: h 256, 8 heads of 32 (q width 256), 2 key/value
// heads (kv width 64), SwiGLU ffn 512, sequence 128, FlashAttention.
constexpr double h = 256, heads = 8, q = 256, kv = 64, f = 512, s = 128;

using testing::small_llama;

// Micro-batch 2: T = 256 tokens.
constexpr double b = 2, T = b * s;

ParallelPlan plan_of(int tp, Framework framework = Framework::megatron) {
  ParallelPlan p{.dp = 1, .tp = tp, .pp = 1, .micro_batch_size = 2, .global_batch_size = 2};
  p.recompute = Recompute::selective_op;
  p.sequence_parallel = tp > 1;
  p.framework = framework;
  if (framework != Framework::megatron)
    p.zero_stage = 3;
  return p;
}

TEST(OpSelectiveRecompute, RecomputesWkWoAndW3ButNotTheAttentionOrW2) {
  const PerOpCostModel cost(small_llama(), plan_of(1));
  std::map<std::string, TransformerOp> gemms;
  int elementwise = 0;
  for (const auto& op : cost.recompute_layer_ops()) {
    EXPECT_NE(op.kind, OpKind::attention) << op.name;
    EXPECT_FALSE(op.attention_core) << op.name;
    if (op.kind == OpKind::matmul)
      gemms[op.name] = op;
    else
      ++elementwise;
  }
  ASSERT_EQ(gemms.size(), 3u);
  const auto& wk = gemms.at("qkv.recompute_wk");
  EXPECT_DOUBLE_EQ(wk.m, T);
  EXPECT_DOUBLE_EQ(wk.n, kv);
  EXPECT_DOUBLE_EQ(wk.k, h);
  EXPECT_DOUBLE_EQ(wk.flops, 2 * T * kv * h);
  EXPECT_DOUBLE_EQ(wk.bytes, 2 * (T * h + h * kv + T * kv));
  const auto& wo = gemms.at("proj.recompute_wo");
  EXPECT_DOUBLE_EQ(wo.flops, 2 * T * h * q);
  const auto& w3 = gemms.at("mlp_up.recompute_w3");
  EXPECT_DOUBLE_EQ(w3.n, f);
  EXPECT_DOUBLE_EQ(w3.flops, 2 * T * f * h);
  // Every forward element-wise kernel outside the attention core: two
  // norms, the rotary embedding, SwiGLU and two residual adds.
  EXPECT_EQ(elementwise, 6);
}

TEST(OpSelectiveRecompute, Fp8KeepsTheRecomputedGemmsInFp8WithTheirInputCasts) {
  auto plan = plan_of(1);
  plan.precision = Precision::fp8;
  plan.fp8_recipe = Fp8Recipe::current;
  const PerOpCostModel cost(small_llama(), plan);
  int casts = 0;
  for (const auto& op : cost.recompute_layer_ops()) {
    if (op.name == "qkv.recompute_wk") {
      EXPECT_TRUE(op.fp8);
      EXPECT_DOUBLE_EQ(op.bytes, (T * h + h * kv) * 1 + 2 * T * kv);  // FP8 operands, BF16 output
    }
    if (op.name.find(".quantize") != std::string::npos)
      ++casts;
  }
  EXPECT_EQ(casts, 4);  // the inputs of qkv, proj, mlp_up and mlp_down, cast again
}

TEST(OpSelectiveRecompute, AnalyticFlopsAreWkWoW3AndCompiledTpSkipsWo) {
  const StageSlice slice{.layers = 2, .first_layer = 0};
  const platforms::GpuSpec gpu = *platforms::find_gpu("H100-SXM");
  {
    const AnalyticCostModel cost(small_llama(), plan_of(1));
    const OpCost back = cost.backward(slice, gpu);
    EXPECT_DOUBLE_EQ(back.hardware_flops - back.model_flops, 2 * 2 * T * h * (kv + q + f));
    EXPECT_DOUBLE_EQ(op_selective_recomputed_layer_flops(small_llama(), plan_of(1)),
                     2 * T * h * (kv + q + f));
  }
  // TP 2, compiled (framework megatron): wo's output only feeds the saved
  // reduce-scatter, so the partitioner does not redo it.
  EXPECT_DOUBLE_EQ(op_selective_recomputed_layer_flops(small_llama(), plan_of(2)), 2 * T * h * (kv + f) / 2);
  // Eager PyTorch reruns the whole block except the saved ops: wo too.
  EXPECT_DOUBLE_EQ(op_selective_recomputed_layer_flops(small_llama(), plan_of(2, Framework::pytorch_fsdp2)),
                   2 * T * h * (kv + q + f) / 2);
}

TEST(OpSelectiveRecompute, LlamaThreeEightBRecomputesAThirdOfItsForwardGemms) {
  const auto model = *find_model_preset("llama3.1-8b");
  ParallelPlan plan = plan_of(1);
  const double tokens = 2.0 * model.seq_len;
  const double forward_gemms = 2 * tokens * model.hidden * (2.0 * 4096 + 2.0 * 1024 + 3.0 * 14336);
  EXPECT_NEAR(op_selective_recomputed_layer_flops(model, plan) / forward_gemms, 19456.0 / 53248, 1e-12);
}

TEST(OpSelectiveRecompute, PerOpRecomputationLiesBetweenSelectiveAndFull) {
  const platforms::GpuSpec gpu = *platforms::find_gpu("H100-SXM");
  auto with = [&](Recompute r) {
    auto plan = plan_of(1);
    plan.recompute = r;
    return PerOpCostModel(small_llama(), plan).layer_times(gpu).recompute_s;
  };
  const double op = with(Recompute::selective_op);
  EXPECT_GT(op, with(Recompute::selective));
  EXPECT_LT(op, with(Recompute::full));
}

TEST(OpSelectiveRecompute, StoresInputWqWvAttentionAndW1Compiled) {
  const double expected = 2 * T * h        // the block input
                          + 2 * T * q      // wq
                          + 2 * T * kv     // wv
                          + 2 * T * q      // SDPA output
                          + 4 * T * heads  // its log-sum-exp, fp32
                          + 2 * T * f;     // w1
  EXPECT_DOUBLE_EQ(expected, 696320);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(small_llama(), plan_of(1)), expected);
}

TEST(OpSelectiveRecompute, EagerAlsoCachesW2sOutput) {
  EXPECT_DOUBLE_EQ(layer_activation_bytes(small_llama(), plan_of(1, Framework::pytorch_fsdp2)),
                   696320 + 2 * T * h);
}

TEST(OpSelectiveRecompute, TensorParallelSplitsTheProjectionsAndSavesTheReduceScatter) {
  const double t = 2, tokens_norm = T / t;
  const double expected = 2 * tokens_norm * h + 2 * T * q / t + 2 * T * kv / t + 2 * T * q / t +
                          4 * T * heads / t + 2 * T * f / t + 2 * tokens_norm * h;
  EXPECT_DOUBLE_EQ(expected, 413696);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(small_llama(), plan_of(2)), expected);
}

// docs/memory.md's figures: Llama 3.1 8B at b 2, s 8,192 (T = 16,384).
TEST(OpSelectiveRecompute, LlamaThreeEightBKeepsUnderAGibibyteALayer) {
  const auto model = *find_model_preset("llama3.1-8b");
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, plan_of(1)) / gib, 0.845703125);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, plan_of(1, Framework::pytorch_fsdp2)) / gib, 0.970703125);
}

TEST(OpSelectiveRecompute, BackwardWorkspaceIsOneLayerRebuilt) {
  const auto model = small_llama();
  const auto plan = plan_of(1);
  EXPECT_DOUBLE_EQ(recompute_workspace_bytes(model, plan),
                   layer_activation_bytes(model, plan, Recompute::none) - 696320);
  EXPECT_GT(recompute_workspace_bytes(model, plan), 0);
}

// With TP the recomputation of wk and w3 gathers the two norms' outputs
// again: the backward's all-gathers fold 4 per layer, its reduce-scatters 2.
TEST(OpSelectiveRecompute, TensorParallelBackwardRepeatsTheTwoAllGathers) {
  const auto model = small_llama();
  const auto cluster = testing::uniform_cluster(1, 2, 100e9, 1e-6);
  auto folds = [&](Recompute r) {
    auto plan = plan_of(2);
    plan.recompute = r;
    const TaskGraph g = build_iteration(model, plan, cluster, testing::FixedCostModel(1, 2));
    std::map<CollectiveOp, int> out;
    for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
      const Task& t = g[v];
      if (t.kind == TaskKind::collective && t.comm == CommKind::tp)
        out[t.op] += t.fold;
    }
    return out;
  };
  const auto none = folds(Recompute::none), op = folds(Recompute::selective_op);
  // Two layers: 2 x 2 in the forward and 2 x 2 in the backward of each.
  EXPECT_EQ(none.at(CollectiveOp::all_gather), 8);
  EXPECT_EQ(none.at(CollectiveOp::reduce_scatter), 8);
  EXPECT_EQ(op.at(CollectiveOp::all_gather), 12);
  EXPECT_EQ(op.at(CollectiveOp::reduce_scatter), 8);
}

std::string problems_text(const ModelSpec& model, const ParallelPlan& plan) {
  std::string text;
  for (const auto& p : plan_problems(model, plan))
    text += p.key + ": " + p.message + "\n";
  return text;
}

TEST(OpSelectiveRecompute, ASmallLlamaPlanIsAccepted) {
  EXPECT_EQ(problems_text(small_llama(), plan_of(1)), "");
  EXPECT_EQ(problems_text(small_llama(), plan_of(2)), "");
}

TEST(OpSelectiveRecompute, RefusesPlansThePolicyIsNotModelledFor) {
  auto expect_refused = [](const ModelSpec& model, const ParallelPlan& plan, const std::string& why) {
    const std::string text = problems_text(model, plan);
    EXPECT_NE(text.find("plan.recompute: selective_op"), std::string::npos) << text;
    EXPECT_NE(text.find(why), std::string::npos) << text;
    EXPECT_NE(text.find("expected recompute none, selective or full"), std::string::npos) << text;
  };
  auto gelu = small_llama();
  gelu.swiglu = false;
  expect_refused(gelu, plan_of(1), "GeLU MLP");
  auto unfused = small_llama();
  unfused.flash_attention = false;
  expect_refused(unfused, plan_of(1), "unfused attention core");
  auto no_sp = plan_of(2);
  no_sp.sequence_parallel = false;
  expect_refused(small_llama(), no_sp, "sequence_parallel false");
  auto cp = plan_of(1);
  cp.cp = 2;
  cp.global_batch_size = 2;
  expect_refused(small_llama(), cp, "context parallelism");
  expect_refused(*find_model_preset("deepseek-v3"), plan_of(1), "MoE model");
}

}  // namespace
}  // namespace trainsim::workloads
