// plan.delay_wgrad_compute (Megatron-core --delay-wgrad-compute, which
// needs the EP A2A overlap, plan.moe_a2a_overlap).
//
// What Megatron defers (megatron/core/models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan.run; gpt/fine_grained_callables.py): with
// the overlap on, every backward runs its layers through the combined
// layer schedule (merged with a forward in the steady state, alone in the
// cool-down), one compute and one communication stream:
//
//   comm: combine_bwd | dispatch_fwd(F) -> dispatch_bwd | combine_fwd(F)
//   comp: attn_fwd(F) | mlp_bwd -> mlp_bwd_dw -> mlp_fwd(F) | attn_bwd -> attn_bwd_dw
//
// mlp_bwd_dw (MoELayer.backward_dw: the routed experts' weight gradients)
// runs after the experts' input gradients, while the backward dispatch
// all-to-all (which needs only those) is in flight; attn_bwd_dw (the
// attention's and the shared experts' weight gradients) after the layer's
// input gradient, while the next layer's combine all-to-all is in flight
// (and for the chunk's first layer after the pipeline send of the
// gradient). Without the flag each slot's backward computes both before
// the all-to-all that follows it.
//
// trainsim's merged F&B runs at layer granularity: a MoE layer's backward
// piece, then one all-to-all folding the layer's dispatch and combine
// gradients (expert_parallel_sync.cpp). With the flag the piece is its
// input gradient (TaskKind::backward_input, which the all-to-all, the TP
// collectives and the pipeline send follow) and its weight gradient
// (TaskKind::backward_weight), which waits for the input gradient and
// gates the next compute of the GPU's stream (the op's next piece, or the
// next op's first), the gradient buckets and the op's end-of-op memory
// release, but not the all-to-all. A GPU runs one compute task at a time
// (first ready first), so the weight gradient runs under the layer's
// all-to-all: each such layer of a backward alone is min(W, all-to-all)
// shorter. Backwards that defer run one piece per layer with an all-to-all
// after each MoE layer, standalone (cool-down) ones too, as Megatron's
// combined schedule does. Dense layers (no all-to-all to hide under) and
// the last MoE piece of a GPU's last op (the gradient synchronisation
// waits for it anyway) keep their weight gradients in the piece.
#include <algorithm>

#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

bool IterationBuilder::defers_weight_gradients(int dp, int rank, std::size_t op_index) const {
  if (!plan_.delay_wgrad_compute || !plan_.moe_a2a_overlap || plan_.ep <= 1 || !model_.is_moe())
    return false;
  const auto& list = schedule(dp).per_rank[static_cast<std::size_t>(rank)];
  if (op_index >= list.size() || list[op_index].kind != PipeOpKind::backward)
    return false;
  const StageSlice slice =
      virtual_stage_slice(model_, plan_, schedule(dp).virtual_stage(rank, list[op_index].chunk));
  return moe_layers_of(model_, slice) > 0;
}

bool IterationBuilder::defers_piece(const PieceSpec& spec, bool deferring, bool gpus_last_piece) const {
  return deferring && !gpus_last_piece && moe_layers_of(model_, spec.slice) > 0;
}

namespace {
double bounded_fraction(double part, double of) {
  return of > 0 ? std::clamp(part / of, 0.0, 1.0) : 0.0;
}
}  // namespace

// The cost model's split of a piece's backward (B + W = backward), the same
// for every GPU of one GpuSpec.
IterationBuilder::WeightShare IterationBuilder::weight_gradient_share(const StageSlice& slice,
                                                                      const platforms::GpuSpec& gpu) const {
  const OpCost whole = cost_.backward(slice, gpu);
  const OpCost weight = cost_.backward_weight(slice, gpu);
  return {.duration = bounded_fraction(weight.duration_s, whole.duration_s),
          .model_flops = bounded_fraction(weight.model_flops, whole.model_flops),
          .hardware_flops = bounded_fraction(weight.hardware_flops, whole.hardware_flops)};
}

Task IterationBuilder::split_off_weight_gradient(Task& task, const OpCost& piece,
                                                 const WeightShare& share) const {
  // The split applied to what the op's costs give the piece (imbalance included).
  Task w = task;
  w.kind = TaskKind::backward_weight;
  w.attention = false;
  w.duration_s = std::min(task.duration_s, piece.duration_s * share.duration);
  w.model_flops = std::min(task.model_flops, piece.model_flops * share.model_flops);
  w.hardware_flops = std::min(task.hardware_flops, piece.hardware_flops * share.hardware_flops);
  w.imbalance_s = task.imbalance_s * bounded_fraction(w.duration_s, task.duration_s);
  task.kind = TaskKind::backward_input;
  task.duration_s -= w.duration_s;
  task.model_flops -= w.model_flops;
  task.hardware_flops -= w.hardware_flops;
  task.imbalance_s -= w.imbalance_s;
  return w;
}

}  // namespace trainsim::workloads::detail
