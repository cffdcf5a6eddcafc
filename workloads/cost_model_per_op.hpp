#pragma once
// The default cost model: every kernel of a layer (transformer_ops.hpp) timed
// on the GPU it runs on, under that GPU's efficiency curves
// (platforms/efficiency/*.yaml):
//
//   kernel time = max(FLOPs / (peak bf16 x efficiency(shape)),
//                     bytes / (HBM bandwidth x memory efficiency(bytes)))
//   pass time   = max(sum of its kernel times, kernels x host overhead)
//
// where a pass is one layer's forward, recomputed forward, input-gradient or
// weight-gradient work (the host bound is what limits small models in eager
// PyTorch). A stage's op is its layers' passes plus the embedding or the
// logits and loss. FLOP counts for MFU / HFU are the analytic ones
// (AnalyticCostModel), so MFU does not depend on the efficiency data.
#include <map>
#include <string>
#include <vector>

#include "platforms/efficiency_profile.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {

struct OpTiming {
  double compute_s = 0;   // FLOPs at the shape's efficiency
  double memory_s = 0;    // bytes at the achievable HBM bandwidth
  double duration_s = 0;  // the larger of the two
  double efficiency = 0;  // fraction of the peak of its format reached (0 for element-wise)
};

// One kernel on one GPU.
OpTiming time_op(const TransformerOp& op, const platforms::GpuSpec& gpu,
                 const platforms::EfficiencyProfile& profile);

// Times of one layer's passes, one micro-batch, one GPU.
struct LayerPassTimes {
  double forward_s = 0;
  double recompute_s = 0;  // what the recomputation mode redoes before the backward
  double backward_input_s = 0;
  double backward_weight_s = 0;
};

class PerOpCostModel final : public CostModel {
 public:
  struct Options {
    bool sequence_parallel = false;
  };
  // The plan's expert parallelism (plan.ep) sets how many experts a GPU
  // runs and how many tokens each one gets.
  PerOpCostModel(ModelSpec model, ParallelPlan plan, Options options);
  PerOpCostModel(ModelSpec model, ParallelPlan plan) : PerOpCostModel(std::move(model), plan, Options{}) {}

  OpCost forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  // backward = backward_input + backward_weight (with any recomputation in
  // backward_input), so a zero-bubble split costs what the 1F1B backward does.
  OpCost backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost optimizer(double parameters, const platforms::GpuSpec& gpu) const override;
  double memory_kernel_s(double bytes, const platforms::GpuSpec& gpu) const override;
  // The MoE layer's kernels re-timed with the local experts' rows scaled by
  // `load` (transformer_ops.hpp, LayerSetup::expert_load), less the
  // balanced layer's.
  double moe_load_extra_s(PipeOpKind kind, double load, const platforms::GpuSpec& gpu) const override;
  // A dense layer's fused ops under torch's async TP: each GEMM the pass
  // fuses timed whole and as one of its tp shards (time_op at m / tp rows).
  std::vector<AsyncTpUnit> async_tp_units(PipeOpKind kind, const platforms::GpuSpec& gpu) const override;

  LayerPassTimes layer_times(const platforms::GpuSpec& gpu) const;
  // The same for a MoE layer (zero for a dense model).
  LayerPassTimes moe_layer_times(const platforms::GpuSpec& gpu) const;
  // The ops of one (dense / MoE) layer with their times on `gpu` (for
  // reports and tests).
  std::vector<std::pair<TransformerOp, OpTiming>> timed_layer_ops(const platforms::GpuSpec& gpu) const;
  std::vector<std::pair<TransformerOp, OpTiming>> timed_moe_layer_ops(const platforms::GpuSpec& gpu) const;
  const LayerSetup& setup() const { return setup_; }
  // The kernels recompute selective_op redoes of a dense layer (empty under
  // the other modes).
  const std::vector<TransformerOp>& recompute_layer_ops() const { return recompute_ops_; }

 private:
  struct PartTimes {
    LayerPassTimes layer, moe_layer;
    // The part of each pass in the linear GEMMs Transformer Engine pairs
    // with the TP collectives (OpCost::tp_overlap_s).
    LayerPassTimes layer_linear, moe_layer_linear;
    double embedding_forward_s = 0, embedding_weight_s = 0;
    double logits_forward_s = 0, logits_input_s = 0, logits_weight_s = 0;
    // The last stage's multi-token prediction modules, all of them: each
    // its norms and projection (mtp_ops), a layer and the output head.
    LayerPassTimes mtp, mtp_linear;
    // Share of a layer's kernel time (all passes) in HBM-bound kernels: the
    // memory_bound_fraction of every forward and backward.
    double layer_memory_bound_fraction = 0;
  };
  const PartTimes& times(const platforms::GpuSpec& gpu) const;
  // One layer's passes (forward, recomputation, input and weight gradient).
  LayerPassTimes pass_times(const std::vector<TransformerOp>& ops, const platforms::GpuSpec& gpu) const;
  // Sum over a slice's layers of one pass time (dense and MoE layers).
  double layers_time(const StageSlice& slice, double LayerPassTimes::*pass, const LayerPassTimes& dense,
                     const LayerPassTimes& moe) const;
  double layers_time(const StageSlice& slice, double LayerPassTimes::*pass, const PartTimes& t) const {
    return layers_time(slice, pass, t.layer, t.moe_layer);
  }
  double linear_time(const StageSlice& slice, double LayerPassTimes::*pass, const PartTimes& t) const {
    return layers_time(slice, pass, t.layer_linear, t.moe_layer_linear);
  }

  ModelSpec model_;
  ParallelPlan plan_;
  LayerSetup setup_;
  AnalyticCostModel flops_;  // FLOP accounting only
  std::vector<TransformerOp> layer_ops_, moe_layer_ops_, embedding_ops_, logits_ops_, mtp_ops_;
  // What recompute selective_op redoes of a dense layer before its backward
  // (op_selective_recompute.hpp); empty under the other modes.
  std::vector<TransformerOp> recompute_ops_;
  // Per GPU type (and its scenario's own efficiency file, if any); the
  // builder asks for the same few GPUs thousands of times. Not thread-safe
  // (the builder is single-threaded).
  using CacheKey = std::pair<std::string, const platforms::EfficiencyProfile*>;
  mutable std::map<CacheKey, PartTimes> cache_;
  // MoE layer passes per (GPU type and profile, load factor).
  using LoadedCacheKey = std::pair<CacheKey, double>;
  mutable std::map<LoadedCacheKey, LayerPassTimes> loaded_cache_;
};

}  // namespace trainsim::workloads
