#pragma once
// How long an op takes on a given GPU. The generator asks a CostModel for the
// duration and FLOPs of every compute op; tests swap in fixed costs to check
// schedules against closed forms.
#include <optional>

#include "platforms/gpu_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/torch_async_tp.hpp"

namespace trainsim::workloads {

// The part of the model one pipeline stage (or chunk) runs, per GPU of its
// tensor-parallel group.
struct StageSlice {
  int layers = 0;
  int first_layer = 0;     // model index of its first layer (MoE layers are not uniform)
  bool embedding = false;  // first stage: token (and position) embedding
  bool logits = false;     // last stage: output projection and loss, and any MTP modules (model.mtp_depth)
};

struct OpCost {
  double duration_s = 0;
  double model_flops = 0;     // counted by MFU
  double hardware_flops = 0;  // counted by HFU (adds recomputation)
  // Share of duration_s spent in kernels bound by HBM bandwidth rather than
  // by the tensor cores (the GPU draws less power in them).
  double memory_bound_fraction = 0;
  // Share of duration_s in the layers' linear GEMMs (QKV, attention output,
  // MLP up and down: their forward, recomputed forward, input and weight
  // gradients), the kernels Transformer Engine's userbuffers pair with the
  // TP collectives when plan.tp_comm_overlap is on.
  double tp_overlap_s = 0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // One micro-batch through `slice` on one GPU of the TP group.
  virtual OpCost forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const = 0;
  // Its backward, including any recomputed forward.
  virtual OpCost backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const = 0;
  // The backward split as zero-bubble schedules run it: B (input gradient,
  // with any recomputed forward) then W (weight gradient). B + W = backward.
  virtual OpCost backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const = 0;
  virtual OpCost backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const = 0;
  // The optimizer step over `parameters` local parameters.
  virtual OpCost optimizer(double parameters, const platforms::GpuSpec& gpu) const = 0;
  // One element-wise kernel that reads and writes `bytes` in all (FSDP2's
  // copy-in and copy-out, a gradient cast): bound by HBM bandwidth.
  virtual double memory_kernel_s(double bytes, const platforms::GpuSpec& gpu) const {
    return bytes / gpu.hbm_bandwidth_Bps;
  }
  // Routing imbalance (workloads/expert_routing.hpp): how much longer one
  // MoE layer's pass of `kind` (forward; backward or input gradient with
  // any recomputation; weight gradient) takes on a GPU whose local experts
  // receive `load` times the balanced share of token copies, than with the
  // balanced share (negative below 1). 0 by default (costs without
  // experts).
  virtual double moe_load_extra_s(PipeOpKind kind, double load, const platforms::GpuSpec& gpu) const {
    (void)kind;
    (void)load;
    (void)gpu;
    return 0;
  }
  // torch's async TP (plan.tp_comm_overlap: torch_async): the fused ops of
  // one dense layer's pass of `kind` (workloads/torch_async_tp.hpp), in
  // execution order. Empty by default (costs without GEMM shapes): the TP
  // collectives then stay NCCL ones after the op.
  virtual std::vector<AsyncTpUnit> async_tp_units(PipeOpKind kind, const platforms::GpuSpec& gpu) const {
    (void)kind;
    (void)gpu;
    return {};
  }
};

// FLOPs from the model shape (Narayanan et al.), time = FLOPs / (peak bf16 x
// efficiency); the optimizer step is bound by HBM bandwidth.
class AnalyticCostModel final : public CostModel {
 public:
  // `efficiency` overrides the GPU catalogue's matmul_efficiency when set.
  AnalyticCostModel(ModelSpec model, ParallelPlan plan, std::optional<double> efficiency = std::nullopt);

  OpCost forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost optimizer(double parameters, const platforms::GpuSpec& gpu) const override;
  // The expert GEMMs' FLOPs of the pass times (load - 1), at the same
  // efficiency as everything else.
  double moe_load_extra_s(PipeOpKind kind, double load, const platforms::GpuSpec& gpu) const override;

  // Bytes the optimizer step reads and writes per parameter: mixed-precision
  // Adam touches the fp32 master weight, both moments and the gradient, and
  // writes the bf16 weight back (4+4+4+4 read, 4+4+4+2 written).
  static constexpr double kOptimizerBytesPerParameter = 30;

 private:
  double forward_flops(const StageSlice& slice) const;
  // Weight-gradient FLOPs: one matmul per weight matrix, the same count as
  // the forward's matmuls (24 b s h^2 per GPT layer, 2 b s h V for logits).
  double weight_gradient_flops(const StageSlice& slice) const;
  double recomputed_flops(const StageSlice& slice) const;
  double recomputed_linear_flops(const StageSlice& slice) const;
  // The MTP modules' forward FLOPs on the last stage (0 elsewhere), and
  // their attention core's.
  double mtp_flops(const StageSlice& slice) const;
  double mtp_core_flops(const StageSlice& slice) const;
  // FLOPs of the layers' linear GEMMs in one forward (the TP-paired ones).
  double linear_forward_flops(const StageSlice& slice) const;
  OpCost timed(double model_flops, double hardware_flops, const platforms::GpuSpec& gpu,
               double linear_flops) const;
  double efficiency(const platforms::GpuSpec& gpu) const;

  ModelSpec model_;
  ParallelPlan plan_;
  std::optional<double> efficiency_;
};

}  // namespace trainsim::workloads
