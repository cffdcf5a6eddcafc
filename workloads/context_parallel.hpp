#pragma once
// Context parallelism (ring attention; Megatron-LM / TransformerEngine's
// context_parallel with the p2p ring): each sequence is split over the cp
// GPUs of a context-parallel group, every GPU runs its s / cp tokens through
// every layer, and in each attention the GPUs pass their key/value blocks
// around the ring (cp - 1 steps) while computing attention on the block
// they hold, so the exchange hides behind the attention core when it can.
//
// In the task graph, an op on a CP rank becomes an attention-core part and
// the rest; the key/value exchange of all the op's layers is one folded ring
// all-gather over the CP group that starts with the attention part, and the
// rest waits for both. Per layer the forward passes K and V once; the
// backward passes them again and sends their gradients back (2 passes), and
// recomputation repeats the forward's pass.
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {

// A CostModel for one GPU of a CP group: the wrapped model's costs for the
// whole sequence, divided by cp. Matmuls scale with the tokens (s / cp), and
// so does the attention core (s / cp queries against all s keys), so every
// FLOP and time divides by cp; what the smaller per-GPU shapes do to
// efficiency is the wrapped model's concern when it knows plan.cp.
class ContextParallelCost final : public CostModel {
 public:
  ContextParallelCost(const CostModel& inner, int cp) : inner_(inner), cp_(cp) {}
  OpCost forward(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward_input(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost backward_weight(const StageSlice& slice, const platforms::GpuSpec& gpu) const override;
  OpCost optimizer(double parameters, const platforms::GpuSpec& gpu) const override;
  // One CP rank's share of the imbalance, as of everything else.
  double moe_load_extra_s(PipeOpKind kind, double load, const platforms::GpuSpec& gpu) const override {
    return inner_.moe_load_extra_s(kind, load, gpu) / cp_;
  }
  std::vector<AsyncTpUnit> async_tp_units(PipeOpKind kind, const platforms::GpuSpec& gpu) const override {
    std::vector<AsyncTpUnit> units = inner_.async_tp_units(kind, gpu);
    for (auto& u : units) {
      u.gemm_s /= cp_;
      u.shard_gemm_s /= cp_;
      u.exposed_s /= cp_;
    }
    return units;
  }

 private:
  OpCost divided(OpCost cost) const;
  const CostModel& inner_;
  int cp_;
};

// Bytes of one ring all-gather that passes one layer's keys and values
// around the CP group: every rank contributes its block of 2 (K, V) x b x
// s / cp x h_kv / t bf16 values, so the collective's buffer is cp blocks.
double cp_exchange_bytes(const ModelSpec& model, const ParallelPlan& plan);
// Ring passes per layer in one op (forward 1; backward 2, plus 1 when it
// recomputes the attention; weight gradient 0).
int cp_exchange_passes(const ParallelPlan& plan, PipeOpKind kind);
// The attention core's share of a slice's compute (its FLOPs over the
// slice's forward FLOPs), the part the exchange can overlap.
double attention_share(const ModelSpec& model, const ParallelPlan& plan, const StageSlice& slice);

}  // namespace trainsim::workloads
