#pragma once
// The kernels behind one compute task of trainsim's task graph: the ops of
// the per-op cost model (workloads/transformer_ops.hpp) a forward, backward
// or optimizer task runs, grouped into the passes the cost model times
// (one layer's forward, recomputation, input gradient or weight gradient,
// the embedding's and the logits' parts), each op with its time on the
// task's GPU:
//
//   pass time = max(sum of its ops' times, its kernels x host overhead)
//   task time = sum of its passes' times   (PerOpCostModel's own sums)
//
// `trainsim export --kineto` lays these kernels into a PyTorch-profiler
// trace and `trainsim diff` into the simulated side of its comparison, so
// a simulation is seen kernel class by kernel class, as a measured trace is.
#include <string>
#include <vector>

#include "platforms/gpu_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::kineto {

struct TaskOp {
  workloads::TransformerOp op;
  double duration_s = 0;  // time_op on the task's GPU, all its kernels
  int pass = 0;           // index into TaskOps::pass_time_s
};

struct TaskOps {
  std::vector<TaskOp> ops;
  std::vector<double> pass_time_s;  // per pass, as the cost model times it
  double host_overhead_s = 0;       // per kernel launch
  double total_s() const;           // sum of the passes
};

// The class-table name a trainsim op's kernels fall in (gemm, attention,
// norm, embedding, optimizer, elementwise): what its exported kernel is
// named to be classified as.
std::string kernel_class_of(const workloads::TransformerOp& op);

class TaskKernels {
 public:
  TaskKernels(workloads::ModelSpec model, workloads::ParallelPlan plan);
  // The ops of a compute task (forward, backward, backward_input,
  // backward_weight, optimizer); empty for a send, a collective or a task of
  // an imported trace (kind compute), which no op list describes. The
  // optimizer's bytes are the ones its duration implies on `gpu` (the task
  // records a time, not a parameter count); a host-bound optimizer step gets
  // no bytes.
  TaskOps of(const workloads::Task& task, const platforms::GpuSpec& gpu) const;

 private:
  void add_pass(TaskOps& out, const std::vector<workloads::TransformerOp>& ops, workloads::OpPass pass,
                bool attention_core_only, const platforms::GpuSpec& gpu) const;
  void add_layer(TaskOps& out, int layer, workloads::TaskKind kind, bool attention_core_only,
                 const platforms::GpuSpec& gpu) const;

  workloads::ModelSpec model_;
  workloads::ParallelPlan plan_;
  workloads::PipelineSchedule layout_;
  std::vector<workloads::TransformerOp> layer_ops_, moe_layer_ops_, embedding_ops_, logits_ops_;
  // recompute selective_op's redone kernels of a dense layer.
  std::vector<workloads::TransformerOp> recompute_ops_;
};

}  // namespace trainsim::kineto
