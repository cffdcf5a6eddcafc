// torch's async TP in the per-op cost model (workloads/torch_async_tp.hpp):
// which GEMMs of a dense layer the micro-pipeline TP pass fuses, and each
// one's shard GEMM timed at its own, smaller shape.
#include "workloads/torch_async_tp.hpp"

#include <gtest/gtest.h>

#include "workloads/cost_model_per_op.hpp"

namespace trainsim::workloads {
namespace {

const platforms::GpuSpec& h100() {
  static const auto gpu = *platforms::find_gpu("H100-SXM");
  return gpu;
}

ParallelPlan llama_tp8(Recompute recompute) {
  ParallelPlan plan{.dp = 1, .tp = 8, .pp = 1, .micro_batch_size = 12, .global_batch_size = 12};
  plan.sequence_parallel = true;
  plan.recompute = recompute;
  plan.tp_comm_overlap = TpCommOverlap::torch_async;
  return plan;
}

// A shard is m / tp rows of the GEMM: FLOPs / tp, the activations' bytes /
// tp, the weight read whole. [98,304 x 4,096] x [4,096 x 768] in BF16 over
// 8 GPUs: 12,288 rows, 77.3 GFLOP, 2 x (12,288 x 4,096 + 4,096 x 768 +
// 12,288 x 768) bytes.
TEST(TorchAsyncTp, AShardIsATpthOfTheRowsWithTheWholeWeight) {
  TransformerOp op{.name = "qkv", .kind = OpKind::matmul, .m = 98304, .n = 768, .k = 4096};
  op.flops = 2 * op.m * op.n * op.k;
  op.bytes = 2 * (op.m * op.k + op.k * op.n + op.m * op.n);
  const TransformerOp shard = async_tp_shard(op, 8);
  EXPECT_DOUBLE_EQ(shard.m, 12288);
  EXPECT_DOUBLE_EQ(shard.n, 768);
  EXPECT_DOUBLE_EQ(shard.k, 4096);
  EXPECT_DOUBLE_EQ(shard.flops, 2.0 * 12288 * 768 * 4096);
  EXPECT_DOUBLE_EQ(shard.bytes, 2.0 * (12288.0 * 4096 + 4096.0 * 768 + 12288.0 * 768));
  // The exposed kernels: the local shard copied (read and written), or the
  // 8 partials [12,288 x 768] read and the output shard written.
  EXPECT_DOUBLE_EQ(async_tp_exposed_bytes(op, CollectiveOp::all_gather, 8), 2 * 12288.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(async_tp_exposed_bytes(op, CollectiveOp::reduce_scatter, 8),
                   2 * (98304.0 * 768 + 12288.0 * 768));
}

// Llama 3.1 8B, TP 8, 12 sequences of 8,192: the forward fuses its four
// (all-gather + QKV, output projection + reduce-scatter, all-gather + MLP up,
// MLP down + reduce-scatter); the input gradients the two all-gathers before
// the output projection's and the MLP down's dgrads; full recomputation adds
// the forward's four; the weight gradients none. Each shard GEMM is timed at
// its own shape: the eight of them take longer than the undivided GEMM
// (smaller outputs sit lower on the efficiency curve), never shorter.
TEST(TorchAsyncTp, TheCostModelNamesEachPassesFusedOpsAndTimesTheirShards) {
  const auto model = *find_model_preset("llama3.1-8b");
  const PerOpCostModel none(model, llama_tp8(Recompute::none), {.sequence_parallel = true});
  const auto forward = none.async_tp_units(PipeOpKind::forward, h100());
  ASSERT_EQ(forward.size(), 4u);
  EXPECT_EQ(forward[0].collective, CollectiveOp::all_gather);
  EXPECT_EQ(forward[1].collective, CollectiveOp::reduce_scatter);
  EXPECT_EQ(forward[2].collective, CollectiveOp::all_gather);
  EXPECT_EQ(forward[3].collective, CollectiveOp::reduce_scatter);
  for (const auto& u : forward) {
    EXPECT_GT(u.shard_gemm_s, u.gemm_s / 8);
    EXPECT_LT(u.shard_gemm_s, u.gemm_s);
    EXPECT_GT(u.exposed_s, 0);
  }
  // The QKV GEMM and its shard, timed by the model's own time_op.
  const auto& profile = platforms::efficiency_profile_of(h100());
  for (const auto& [op, timing] : none.timed_layer_ops(h100()))
    if (op.name == "qkv" && op.pass == OpPass::forward) {
      EXPECT_DOUBLE_EQ(forward[0].gemm_s, timing.duration_s);
      EXPECT_DOUBLE_EQ(forward[0].shard_gemm_s, time_op(async_tp_shard(op, 8), h100(), profile).duration_s);
    }
  const auto input = none.async_tp_units(PipeOpKind::backward_input, h100());
  ASSERT_EQ(input.size(), 2u);
  EXPECT_EQ(input[0].collective, CollectiveOp::all_gather);
  EXPECT_EQ(input[1].collective, CollectiveOp::all_gather);
  EXPECT_EQ(none.async_tp_units(PipeOpKind::backward, h100()).size(), 2u);
  EXPECT_TRUE(none.async_tp_units(PipeOpKind::backward_weight, h100()).empty());
  const PerOpCostModel full(model, llama_tp8(Recompute::full), {.sequence_parallel = true});
  EXPECT_EQ(full.async_tp_units(PipeOpKind::backward, h100()).size(), 6u);
  // What stays NCCL: the reduce-scatters after the QKV and MLP-up dgrads.
  EXPECT_EQ(async_tp_plain_reduce_scatters(PipeOpKind::backward), 2);
  EXPECT_EQ(async_tp_plain_reduce_scatters(PipeOpKind::forward), 0);
}

}  // namespace
}  // namespace trainsim::workloads
