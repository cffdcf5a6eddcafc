// FP8 training as Transformer Engine runs it (workloads/precision.hpp): which
// kernels change, the quantization kernels it adds with their bytes, the FP8
// peak the GEMMs run at, and what memory and communication gain or lose.
#include "workloads/precision.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "platforms/efficiency_profile.hpp"
#include "platforms/gpu_spec.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/memory_model.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec llama_8b() {
  return *find_model_preset("llama3.1-8b");
}

ParallelPlan fp8_plan(Fp8Recipe recipe = Fp8Recipe::delayed, int tp = 1, bool sp = false) {
  ParallelPlan plan{.dp = 1, .tp = tp, .pp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  plan.sequence_parallel = sp;
  plan.precision = Precision::fp8;
  plan.fp8_recipe = recipe;
  return plan;
}

std::vector<TransformerOp> ops_of(const ParallelPlan& plan) {
  const ModelSpec model = llama_8b();
  return with_precision(layer_ops(model, layer_setup(model, 1, plan.tp, plan.sequence_parallel)), plan);
}

const TransformerOp* find(const std::vector<TransformerOp>& ops, const std::string& name) {
  const auto it =
      std::find_if(ops.begin(), ops.end(), [&](const TransformerOp& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

// The index of an op, to check what comes before what.
std::ptrdiff_t position(const std::vector<TransformerOp>& ops, const std::string& name) {
  const auto it =
      std::find_if(ops.begin(), ops.end(), [&](const TransformerOp& op) { return op.name == name; });
  return it - ops.begin();
}

TEST(Precision, Bf16LeavesEveryOpAsItWas) {
  const ModelSpec model = llama_8b();
  ParallelPlan plan{.dp = 1, .tp = 2, .pp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  const auto ops = layer_ops(model, layer_setup(model, 1, 2));
  const auto same = with_precision(ops, plan);
  ASSERT_EQ(same.size(), ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(same[i].name, ops[i].name);
    EXPECT_EQ(same[i].bytes, ops[i].bytes);
    EXPECT_FALSE(same[i].fp8);
  }
}

TEST(Precision, Fp8RunsTheLinearGemmsOnlyInFp8) {
  const auto ops = ops_of(fp8_plan());
  for (const char* name : {"qkv", "proj", "mlp_up", "mlp_down", "qkv.dgrad", "proj.dgrad", "mlp_up.dgrad",
                           "mlp_down.dgrad", "qkv.wgrad", "proj.wgrad", "mlp_up.wgrad", "mlp_down.wgrad"}) {
    const auto* op = find(ops, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->fp8) << name;
  }
  for (const auto& op : ops) {
    if (op.kind == OpKind::attention || op.kind == OpKind::elementwise) {
      EXPECT_FALSE(op.fp8) << op.name;
    }
  }
}

TEST(Precision, Fp8GemmsReadOneByteOperandsAndWriteBf16) {
  const ModelSpec model = llama_8b();
  const auto bf16 = layer_ops(model, layer_setup(model, 1, 1));
  const auto fp8 = ops_of(fp8_plan());
  const auto& a = *find(bf16, "mlp_down");
  const auto& b = *find(fp8, "mlp_down");
  EXPECT_EQ(b.flops, a.flops);
  EXPECT_DOUBLE_EQ(b.bytes, a.m * a.k + a.k * a.n + 2 * a.m * a.n);
}

// Delayed scaling on Hopper without sequence parallelism: the norms before
// QKV and the first MLP GEMM write the FP8 input and its transpose (the
// BF16 output's 2 bytes, so the same traffic); the projection's and the
// second MLP GEMM's inputs get a cast-transpose kernel (read 2, write 1 + 1),
// every dgrad's output gradient one too.
TEST(Precision, DelayedScalingFusesTheNormCastsAndCastsTheOtherInputs) {
  const ModelSpec model = llama_8b();
  const auto bf16 = layer_ops(model, layer_setup(model, 1, 1));
  const auto ops = ops_of(fp8_plan());
  EXPECT_EQ(find(ops, "qkv.quantize"), nullptr);
  EXPECT_EQ(find(ops, "mlp_up.quantize"), nullptr);
  EXPECT_DOUBLE_EQ(find(ops, "norm1")->bytes, find(bf16, "norm1")->bytes);
  const auto& down = *find(ops, "mlp_down");
  const auto* cast = find(ops, "mlp_down.quantize");
  ASSERT_NE(cast, nullptr);
  EXPECT_DOUBLE_EQ(cast->bytes, down.m * down.k * (2 + 1 + 1));
  EXPECT_EQ(cast->kernels, 1);
  EXPECT_EQ(position(ops, "mlp_down.quantize") + 1, position(ops, "mlp_down"));
  ASSERT_NE(find(ops, "proj.quantize"), nullptr);
  for (const char* dgrad : {"qkv.dgrad", "proj.dgrad", "mlp_up.dgrad", "mlp_down.dgrad"}) {
    const auto* q = find(ops, std::string(dgrad) + ".quantize");
    ASSERT_NE(q, nullptr) << dgrad;
    EXPECT_EQ(q->pass, OpPass::backward_input);
    EXPECT_DOUBLE_EQ(q->bytes, find(ops, dgrad)->m * find(ops, dgrad)->k * 4) << dgrad;
  }
  EXPECT_EQ(find(ops, "qkv.wgrad.transpose"), nullptr);
}

// With sequence parallelism the norm's FP8 output is all-gathered first, so
// the norm writes one copy (1 byte, not 2) and the wgrad transposes the
// gathered input (read 1, write 1).
TEST(Precision, SequenceParallelTransposesTheGatheredInputBeforeTheWgrad) {
  const ModelSpec model = llama_8b();
  const auto bf16 = layer_ops(model, layer_setup(model, 1, 4, true));
  const auto ops = ops_of(fp8_plan(Fp8Recipe::delayed, 4, true));
  // The norm's T / t tokens: read 2 + write 2 bytes each in BF16, read 2 +
  // write 1 in FP8.
  const double norm_elements = find(bf16, "norm1")->bytes / 4;
  EXPECT_DOUBLE_EQ(norm_elements, find(ops, "qkv")->m * find(ops, "qkv")->k / 4);
  EXPECT_DOUBLE_EQ(find(ops, "norm1")->bytes, 3 * norm_elements);
  const auto* t = find(ops, "qkv.wgrad.transpose");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->pass, OpPass::backward_weight);
  EXPECT_DOUBLE_EQ(t->bytes, 2 * find(ops, "qkv.wgrad")->m * find(ops, "qkv.wgrad")->k);
  EXPECT_LT(position(ops, "qkv.wgrad.transpose"), position(ops, "qkv.wgrad"));
  EXPECT_EQ(find(ops, "proj.wgrad.transpose"), nullptr);  // its input is not gathered
}

// Current scaling computes each tensor's amax first: nothing is fused into
// the norms, every cast is two kernels and reads its input twice.
TEST(Precision, CurrentScalingCastsEveryInputInTwoKernels) {
  const ModelSpec model = llama_8b();
  const auto bf16 = layer_ops(model, layer_setup(model, 1, 1));
  const auto ops = ops_of(fp8_plan(Fp8Recipe::current));
  EXPECT_DOUBLE_EQ(find(ops, "norm1")->bytes, find(bf16, "norm1")->bytes);
  const auto* cast = find(ops, "qkv.quantize");
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->kernels, 2);
  EXPECT_DOUBLE_EQ(cast->bytes, find(ops, "qkv")->m * find(ops, "qkv")->k * (2 + 2 + 1 + 1));
}

TEST(Precision, Mxfp8CarriesAScaleBytePer32Elements) {
  const auto ops = ops_of(fp8_plan(Fp8Recipe::mxfp8));
  const auto& up = *find(ops, "mlp_up");
  EXPECT_DOUBLE_EQ(up.bytes, (up.m * up.k + up.k * up.n) * (1 + 1.0 / 32) + 2 * up.m * up.n);
  EXPECT_DOUBLE_EQ(saved_linear_input_bytes(fp8_plan(Fp8Recipe::mxfp8)), 1 + 1.0 / 32);
}

// A large FP8 GEMM on H100 runs at the FP8 peak under the FP8 curves: twice
// the BF16 rate when both reach the same fraction.
TEST(Precision, Fp8GemmsAreTimedAtTheFp8PeakUnderTheirOwnCurves) {
  const auto gpu = *platforms::find_gpu("H100-SXM");
  const auto& profile = platforms::efficiency_profile_for(gpu.name);
  ASSERT_TRUE(profile.matmul_fp8.has_value());
  TransformerOp op{.name = "mlp_up", .kind = OpKind::matmul, .m = 16384, .n = 16384, .k = 16384};
  op.flops = 2 * op.m * op.n * op.k;
  op.fp8 = true;
  const auto& e = *profile.matmul_fp8;
  const double efficiency = e.peak_fraction * e.output_elements.at(op.m * op.n) * e.reduction_depth.at(op.k);
  EXPECT_DOUBLE_EQ(time_op(op, gpu, profile).compute_s, op.flops / (gpu.peak_fp8_flops * efficiency));
  EXPECT_DOUBLE_EQ(time_op(op, gpu, profile).efficiency, efficiency);
}

// MXFP8 GEMMs take the profile's matmul_mxfp8 curves (B200: fitted apart,
// slower than per-tensor FP8) and fall back on matmul_fp8 without them.
TEST(Precision, Mxfp8GemmsUseTheirOwnCurvesWhereTheProfileHasThem) {
  const auto gpu = *platforms::find_gpu("B200");
  auto profile = platforms::efficiency_profile_for(gpu.name);
  ASSERT_TRUE(profile.matmul_fp8.has_value());
  ASSERT_TRUE(profile.matmul_mxfp8.has_value());
  ASSERT_NE(profile.matmul_mxfp8->peak_fraction, profile.matmul_fp8->peak_fraction);
  TransformerOp op{.name = "mlp_up", .kind = OpKind::matmul, .m = 16384, .n = 16384, .k = 16384};
  op.flops = 2 * op.m * op.n * op.k;
  op.fp8 = true;
  const auto efficiency = [&](const platforms::MatmulEfficiency& e) {
    return e.peak_fraction * e.output_elements.at(op.m * op.n) * e.reduction_depth.at(op.k);
  };
  EXPECT_DOUBLE_EQ(time_op(op, gpu, profile).efficiency, efficiency(*profile.matmul_fp8));
  op.mxfp8 = true;
  EXPECT_DOUBLE_EQ(time_op(op, gpu, profile).efficiency, efficiency(*profile.matmul_mxfp8));
  profile.matmul_mxfp8.reset();
  EXPECT_DOUBLE_EQ(time_op(op, gpu, profile).efficiency, efficiency(*profile.matmul_fp8));
}

TEST(Precision, Fp8LayersAreFasterAndMoveMoreElementwiseBytes) {
  const ModelSpec model = llama_8b();
  ParallelPlan bf16{.dp = 1, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  const auto gpu = *platforms::find_gpu("H100-SXM");
  const PerOpCostModel a(model, bf16), b(model, fp8_plan());
  const auto ta = a.layer_times(gpu), tb = b.layer_times(gpu);
  EXPECT_LT(tb.forward_s, ta.forward_s);
  EXPECT_LT(tb.backward_weight_s, ta.backward_weight_s);
  // Not twice as fast: attention and the element-wise kernels stay, casts come.
  EXPECT_GT(tb.forward_s, 0.5 * ta.forward_s);
}

// Korthikanti's terms with the four linear inputs saved in FP8: the QKV and
// first MLP inputs (s b h each, not split by TP without SP), the projection's
// (s b h / t) and the second MLP GEMM's (s b f / t) lose a byte per element.
TEST(Precision, Fp8SavesOneByteOfEachSavedLinearInput) {
  ModelSpec model = llama_8b();
  ParallelPlan bf16{.dp = 1, .tp = 4, .pp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  ParallelPlan fp8 = bf16;
  fp8.precision = Precision::fp8;
  const double sbh = double(model.seq_len) * model.hidden;
  const double f = double(model.ffn_hidden) / model.hidden;
  EXPECT_NEAR(layer_activation_bytes(model, bf16) - layer_activation_bytes(model, fp8),
              sbh * (2 + (1 + f) / 4), 1e-6 * sbh);
  // Full recomputation keeps the layer input, in BF16.
  bf16.recompute = fp8.recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, bf16), layer_activation_bytes(model, fp8));
}

TEST(Precision, Fp8WeightCopiesAreResidentUnlessTheWeightsAreFp8) {
  const ModelSpec model = llama_8b();
  ParallelPlan bf16{.dp = 8, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 8};
  bf16.zero_stage = 1;
  ParallelPlan fp8 = bf16;
  fp8.precision = Precision::fp8;
  const GpuMemoryModel a(model, bf16), b(model, fp8);
  const double layers = model.layers * model.layer_parameters();
  EXPECT_NEAR(b.resident(0)[MemoryKind::weights] - a.resident(0)[MemoryKind::weights], 2 * layers,
              1e-6 * layers);
  fp8.fp8_param_gather = true;
  const GpuMemoryModel c(model, fp8);
  EXPECT_DOUBLE_EQ(c.resident(0)[MemoryKind::weights], a.resident(0)[MemoryKind::weights]);
}

TEST(Precision, Fp8ParamGatherMovesOneBytePerFp8Weight) {
  ParallelPlan plan = fp8_plan();
  EXPECT_DOUBLE_EQ(param_gather_bytes_per_parameter(plan, 0.9), 2);  // without fp8_param_gather
  plan.fp8_param_gather = true;
  EXPECT_DOUBLE_EQ(param_gather_bytes_per_parameter(plan, 1.0), 1);
  EXPECT_DOUBLE_EQ(param_gather_bytes_per_parameter(plan, 0.75), 0.25 * 2 + 0.75);
}

TEST(Precision, SequenceParallelAllGathersMoveFp8AndReduceScattersBf16) {
  EXPECT_DOUBLE_EQ(tp_collective_byte_factor(fp8_plan(Fp8Recipe::delayed, 4, true), true), 0.5);
  EXPECT_DOUBLE_EQ(tp_collective_byte_factor(fp8_plan(Fp8Recipe::delayed, 4, true), false), 1);
  EXPECT_DOUBLE_EQ(tp_collective_byte_factor(fp8_plan(Fp8Recipe::delayed, 4, false), true),
                   1);  // all-reduces
  ParallelPlan bf16{.dp = 1, .tp = 4, .pp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  bf16.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(tp_collective_byte_factor(bf16, true), 1);
}

TEST(Precision, TheOptimizerCastsTheWeightsOncePerStep) {
  ParallelPlan plan = fp8_plan();
  EXPECT_DOUBLE_EQ(fp8_weight_cast_bytes_per_parameter(plan), 2 + 1 + 1);
  plan.fp8_param_gather = true;  // the optimizer writes the FP8 weights instead of BF16 ones
  EXPECT_DOUBLE_EQ(fp8_weight_cast_bytes_per_parameter(plan), 0);
  ParallelPlan bf16{.dp = 1, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  EXPECT_DOUBLE_EQ(fp8_weight_cast_bytes_per_parameter(bf16), 0);
}

}  // namespace
}  // namespace trainsim::workloads
