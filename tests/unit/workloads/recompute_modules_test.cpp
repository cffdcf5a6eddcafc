// Megatron's selective recomputation by module (plan.recompute_modules,
// workloads/recompute_modules.hpp) on DeepSeek-V3's layers: what each module
// redoes (its ops, their FLOPs against the closed form), what it leaves
// unstored (bytes a token, counted by hand from the model's config: h 7168,
// 128 heads, q_lora_rank 1536, kv_lora_rank 512, head dims 128 + 64 and
// 128, 8 routed experts of 2,048, dense layers' MLP 18,432), and the rules.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <algorithm>

#include "platforms/efficiency_profile.hpp"
#include "platforms/gpu_spec.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/precision.hpp"
#include "workloads/recompute_modules.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec v3() {
  return *find_model_preset("deepseek-v3");
}

ParallelPlan selective(std::vector<RecomputeModule> modules) {
  ParallelPlan plan{.tp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  plan.recompute = Recompute::selective;
  plan.recompute_modules = std::move(modules);
  return plan;
}

std::set<std::string> redone_names(const std::vector<TransformerOp>& ops, const ParallelPlan& plan) {
  std::set<std::string> names;
  for (const auto& op : ops)
    if (selectively_recomputed(op, plan))
      names.insert(op.name);
  return names;
}

double redone_flops(const std::vector<TransformerOp>& ops, const ParallelPlan& plan) {
  double flops = 0;
  for (const auto& op : ops)
    if (selectively_recomputed(op, plan))
      flops += op.flops;
  return flops;
}

TEST(RecomputeModules, MlaUpProjRedoesTheUpProjectionsAndRopeNotTheAttentionCore) {
  const ModelSpec m = v3();
  const ParallelPlan plan = selective({RecomputeModule::mla_up_proj});
  const auto ops = moe_layer_ops(m, layer_setup(m, 1, 1));
  EXPECT_EQ(redone_names(ops, plan), (std::set<std::string>{"q_up", "kv_up", "rope"}));
  // 2 T n (r_q d_qk + r_kv (d_nope + d_v)) = 2 x 4096 x 128 x (1536 x 192 + 512 x 256).
  const double closed = 2 * 4096.0 * 128 * (1536 * 192 + 512 * 256);
  EXPECT_DOUBLE_EQ(redone_flops(ops, plan), closed);
  EXPECT_DOUBLE_EQ(selective_recomputed_layer_flops(m, plan, true), closed);
  // Without query compression (DeepSeek-V2-Lite) q_proj is redone instead.
  const ModelSpec lite = *find_model_preset("deepseek-v2-lite");
  const auto lite_ops = moe_layer_ops(lite, layer_setup(lite, 1, 1));
  EXPECT_EQ(redone_names(lite_ops, plan), (std::set<std::string>{"q_proj", "kv_up", "rope"}));
  EXPECT_DOUBLE_EQ(redone_flops(lite_ops, plan), selective_recomputed_layer_flops(lite, plan, true));
  // The default list (core_attn alone) is today's selective recomputation.
  const ParallelPlan core = selective({});
  EXPECT_EQ(redone_names(ops, core), (std::set<std::string>{"flash_attention"}));
  EXPECT_DOUBLE_EQ(selective_recomputed_layer_flops(m, core, true), m.attention_core_forward_flops(1));
}

TEST(RecomputeModules, FlopsOfTheChosenOpsEqualTheClosedFormForEveryModuleAndLayerKind) {
  const ModelSpec m = v3();
  ParallelPlan plan = selective({RecomputeModule::core_attn, RecomputeModule::mla_up_proj,
                                 RecomputeModule::moe_act, RecomputeModule::mlp});
  plan.tp = 2;
  plan.sequence_parallel = true;
  const auto setup = layer_setup(m, 1, 2, true);
  // FlashAttention's kernel runs half of the causal core: the closed form
  // counts its whole forward, as the analytic model's selective case does.
  const double half_core = 0.5 * m.attention_core_forward_flops(1) / 2;
  EXPECT_NEAR(redone_flops(layer_ops(m, setup), plan) + half_core,
              selective_recomputed_layer_flops(m, plan, false),
              1e-6 * selective_recomputed_layer_flops(m, plan, false));
  EXPECT_NEAR(redone_flops(moe_layer_ops(m, setup), plan) + half_core,
              selective_recomputed_layer_flops(m, plan, true),
              1e-6 * selective_recomputed_layer_flops(m, plan, true));
  // moe_act on a MoE layer redoes the experts' activation (no GEMM); mlp
  // redoes the dense layers' MLP only.
  const auto moe_names = redone_names(moe_layer_ops(m, setup), selective({RecomputeModule::moe_act}));
  EXPECT_EQ(moe_names, (std::set<std::string>{"experts_act"}));
  EXPECT_TRUE(redone_names(moe_layer_ops(m, setup), selective({RecomputeModule::mlp})).empty());
  EXPECT_EQ(redone_names(layer_ops(m, setup), selective({RecomputeModule::mlp})),
            (std::set<std::string>{"mlp_up", "swiglu", "mlp_down"}));
}

TEST(RecomputeModules, EachModuleLeavesItsTensorsUnstored) {
  const ModelSpec m = v3();
  const double tokens = 4096;
  const ParallelPlan core = selective({});
  const double dense = layer_activation_bytes(m, core, Recompute::selective, false);
  const double moe = layer_activation_bytes(m, core, Recompute::selective, true);
  // mla_up_proj: Q and K 2 x 2 x 128 x 192, V 2 x 128 x 128 bytes a token;
  // FlashAttention keeps no scores, so dropping core_attn adds nothing.
  const double qkv = 4 * 128 * 192.0 + 2 * 128 * 128.0;
  const ParallelPlan up = selective({RecomputeModule::mla_up_proj});
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, up, Recompute::selective, false), dense - tokens * qkv);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, up, Recompute::selective, true), moe - tokens * qkv);
  // moe_act: the SwiGLU output of 8 routed copies at 2,048, 2 bytes each.
  const ParallelPlan act = selective({RecomputeModule::moe_act});
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, act, Recompute::selective, true), moe - tokens * 2 * 8 * 2048.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, act, Recompute::selective, false), dense);
  // mlp: a dense layer's SwiGLU intermediates, 6 x 18,432 bytes a token.
  const ParallelPlan mlp = selective({RecomputeModule::mlp});
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, mlp, Recompute::selective, false), dense - tokens * 6 * 18432.0);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, mlp, Recompute::selective, true), moe);
  // Under FP8 the experts' down projection keeps its input in FP8: 1 byte.
  ParallelPlan core8 = core, act8 = act;
  core8.precision = act8.precision = Precision::fp8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, act8, Recompute::selective, true),
                   layer_activation_bytes(m, core8, Recompute::selective, true) - tokens * 8 * 2048.0);
}

TEST(RecomputeModules, PerOpRecomputeTimeIsTheChosenOpsAndCostsLessThanTheCore) {
  const ModelSpec m = v3();
  const auto gpu = *platforms::find_gpu("H100-SXM");
  ParallelPlan up = selective({RecomputeModule::mla_up_proj});
  up.precision = Precision::fp8;
  ParallelPlan core = selective({});
  core.precision = Precision::fp8;
  const PerOpCostModel with_up(m, up), with_core(m, core);
  const double up_s = with_up.moe_layer_times(gpu).recompute_s;
  const double core_s = with_core.moe_layer_times(gpu).recompute_s;
  const auto& profile = platforms::efficiency_profile_of(gpu);
  double expected = 0;
  int kernels = 0;
  for (const auto& op : with_precision(moe_layer_ops(m, layer_setup(m, 1, 1)), up))
    if (selectively_recomputed(op, up)) {
      expected += time_op(op, gpu, profile).duration_s;
      kernels += op.kernels;
    }
  EXPECT_GT(kernels, 3);  // q_up, kv_up, rope and the casts before the FP8 GEMMs
  EXPECT_DOUBLE_EQ(up_s, std::max(expected, kernels * profile.host_overhead_per_kernel_s));
  EXPECT_GT(up_s, 0);
  EXPECT_LT(up_s, core_s);
  // The rest of the layer's passes do not move.
  EXPECT_DOUBLE_EQ(with_up.moe_layer_times(gpu).forward_s, with_core.moe_layer_times(gpu).forward_s);
  EXPECT_DOUBLE_EQ(with_up.moe_layer_times(gpu).backward_input_s,
                   with_core.moe_layer_times(gpu).backward_input_s);
}

TEST(RecomputeModules, RulesNameTheModuleAndWhatIsExpected) {
  auto messages = [](const ModelSpec& model, const ParallelPlan& plan) {
    std::string all;
    for (const auto& p : recompute_modules_problems(model, plan))
      all += p.key + ": " + p.message + "\n";
    return all;
  };
  const ModelSpec mla = v3();
  EXPECT_EQ(messages(mla, selective({RecomputeModule::mla_up_proj, RecomputeModule::moe_act})), "");
  ParallelPlan full = selective({RecomputeModule::mla_up_proj});
  full.recompute = Recompute::full;
  EXPECT_NE(messages(mla, full).find("given with recompute full"), std::string::npos) << messages(mla, full);
  EXPECT_NE(messages(mla, selective({RecomputeModule::mlp, RecomputeModule::mlp})).find("lists mlp twice"),
            std::string::npos);
  const ModelSpec llama = *find_model_preset("llama3-8b");
  const std::string dense =
      messages(llama, selective({RecomputeModule::mla_up_proj, RecomputeModule::moe_act}));
  EXPECT_NE(dense.find("plan.recompute_modules: lists mla_up_proj"), std::string::npos) << dense;
  EXPECT_NE(dense.find("lists moe_act with a dense model"), std::string::npos) << dense;
  // Through the plan's checks, with the others.
  bool found = false;
  for (const auto& p : plan_problems(llama, selective({RecomputeModule::mla_up_proj})))
    found = found || p.key == "plan.recompute_modules";
  EXPECT_TRUE(found);
  EXPECT_EQ(recompute_module_named("moe_act"), RecomputeModule::moe_act);
  EXPECT_FALSE(recompute_module_named("layernorm").has_value());
}

}  // namespace
}  // namespace trainsim::workloads
