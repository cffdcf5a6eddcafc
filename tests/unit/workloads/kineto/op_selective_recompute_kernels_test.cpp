// What `trainsim export --kineto` writes for a layer's backward under
// recompute selective_op: the recomputed kernels of torchtitan's per-op
// policy (workloads/op_selective_recompute.hpp) before the input gradient,
// timed as the per-op cost model times that pass.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/small_llama.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/kineto/task_kernels.hpp"

namespace trainsim::kineto {
namespace {

using testing::small_llama;

TEST(OpSelectiveRecomputeKernels, ALayersBackwardStartsWithWkWoW3AndTheElementwiseKernels) {
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = 1, .micro_batch_size = 2, .global_batch_size = 2};
  plan.recompute = workloads::Recompute::selective_op;
  const platforms::GpuSpec gpu = *platforms::find_gpu("H100-SXM");
  const TaskKernels kernels(small_llama(), plan);
  workloads::Task task;
  task.kind = workloads::TaskKind::backward;
  task.stage = 0;
  task.layer = 0;
  const TaskOps ops = kernels.of(task, gpu);
  std::map<std::string, int> in_first_pass;
  for (const auto& op : ops.ops)
    if (op.pass == 0)
      ++in_first_pass[op.op.name];
  EXPECT_EQ(in_first_pass["qkv.recompute_wk"], 1);
  EXPECT_EQ(in_first_pass["proj.recompute_wo"], 1);
  EXPECT_EQ(in_first_pass["mlp_up.recompute_w3"], 1);
  EXPECT_EQ(in_first_pass["norm1"], 1);
  EXPECT_EQ(in_first_pass["flash_attention"], 0);  // saved, not redone
  ASSERT_EQ(ops.pass_time_s.size(), 3u);           // recomputation, input gradient, weight gradient
  EXPECT_DOUBLE_EQ(ops.pass_time_s[0],
                   workloads::PerOpCostModel(small_llama(), plan).layer_times(gpu).recompute_s);
}

}  // namespace
}  // namespace trainsim::kineto
