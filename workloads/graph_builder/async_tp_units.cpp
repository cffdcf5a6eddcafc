// plan.tp_comm_overlap: torch_async (PyTorch's async TP): each fused op of a
// piece as events (workloads/torch_async_tp.hpp): the exposed kernel, the
// shard GEMMs at their own shape, the shard copies beside them.
#include <algorithm>
#include <utility>

#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/op_selective_recompute.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

// A cost model without GEMM shapes (the analytic one) names no fused op:
// the TP collectives then stay NCCL ones after the op.
bool IterationBuilder::runs_async_tp(PipeOpKind kind, const StageSlice& slice) const {
  return plan_.torch_async_tp() && plan_.tp > 1 && kind != PipeOpKind::backward_weight &&
         transformer_layers_of(model_, slice) > 0 && !cost_.async_tp_units(kind, cluster_.gpu_of(0)).empty();
}

// Takes the piece's fused GEMMs out of `rest` (the piece's task before it
// is added): their undivided time and its share of the FLOPs. `units`: the
// cost model's fused ops for the op's kind on the GPU's spec.
IterationBuilder::AsyncTpPiece IterationBuilder::take_async_tp_gemms(Task& rest,
                                                                     std::vector<AsyncTpUnit> units,
                                                                     const StageSlice& slice) const {
  AsyncTpPiece p{.units = std::move(units),
                 .layers = static_cast<double>(transformer_layers_of(model_, slice)),
                 .base = rest};
  double undivided = 0;
  for (const auto& u : p.units)
    undivided += p.layers * u.gemm_s;
  const double whole = rest.duration_s;
  const double gemm = std::clamp(undivided, 0.0, whole);
  const double share = whole > 0 ? gemm / whole : 0.0;
  p.base.imbalance_s = 0;
  p.base.memory_bound_fraction = 0;
  p.base.attention = false;
  // FLOPs per second of undivided GEMM time (a host-bound pass keeps its
  // GEMMs within its time: `gemm` may fall short of `undivided`).
  p.model_flops_per_s = undivided > 0 ? rest.model_flops * share / undivided : 0;
  p.hardware_flops_per_s = undivided > 0 ? rest.hardware_flops * share / undivided : 0;
  rest.duration_s = whole - gemm;
  rest.model_flops -= rest.model_flops * share;
  rest.hardware_flops -= rest.hardware_flops * share;
  rest.memory_bound_fraction =
      rest.duration_s > 0 ? std::min(1.0, rest.memory_bound_fraction * whole / rest.duration_s) : 0.0;
  return p;
}

// Each fused op in turn on every GPU of the op, after the piece's rest:
//   all-gather:     [exposed copy] -> [(k - 1) shard GEMMs] -> [last shard GEMM]
//                                  -> [(k - 1) shard copies] ----^
//   reduce-scatter: [first shard GEMM] -> [(k - 1) shard GEMMs] -> [sum of the partials]
//                                      -> [(k - 1) shard copies] ----^
// A copy task waits for every GPU of its TP group (the barrier) and folds
// the k - 1 ring shifts of all the piece's layers (one latency each).
void IterationBuilder::add_async_tp_units(const PipeOp& op, int rank, const PieceSpec& spec,
                                          const std::vector<int>& gpus, const std::vector<int>& tp_groups,
                                          const std::vector<AsyncTpPiece>& pieces,
                                          std::vector<BuiltOp>& built) {
  const int k = plan_.tp;
  const std::size_t units = pieces.empty() ? 0 : pieces.front().units.size();
  for (std::size_t u = 0; u < units; ++u) {
    const CollectiveOp collective = pieces.front().units[u].collective;
    const bool gather = collective == CollectiveOp::all_gather;
    std::vector<TaskId> before(gpus.size()), beside(gpus.size());
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const AsyncTpPiece& p = pieces[g];
      const AsyncTpUnit& unit = p.units[u];
      auto gemm_task = [&](double shards) {
        Task t = p.base;
        t.duration_s = shards * p.layers * unit.shard_gemm_s;
        t.model_flops = p.model_flops_per_s * p.layers * unit.gemm_s * shards / k;
        t.hardware_flops = p.hardware_flops_per_s * p.layers * unit.gemm_s * shards / k;
        return t;
      };
      Task first = gemm_task(1);
      if (gather) {  // the local shard's copy into the symmetric buffer
        first.duration_s = p.layers * unit.exposed_s;
        first.model_flops = first.hardware_flops = 0;
        first.memory_bound_fraction = 1;
      }
      before[g] = graph_.add(first);
      graph_.depend(built[g].pieces.back().last, before[g]);
      beside[g] = graph_.add(gemm_task(k - 1));
      graph_.depend(before[g], beside[g]);
    }
    const double bytes = tp_pass_bytes(collective, op.kind) / k;
    std::vector<TaskId> copies(static_cast<std::size_t>(plan_.cp));
    for (int cp = 0; cp < plan_.cp; ++cp) {
      Task copy = collective_task(CommKind::tp, CollectiveOp::send_recv,
                                  tp_groups[static_cast<std::size_t>(cp)], rank, bytes,
                                  {.chunk = op.chunk,
                                   .micro_batch = op.micro_batch,
                                   .layer = spec.layer,
                                   .fold = (k - 1) * static_cast<int>(pieces.front().layers)});
      copy.copy_engine = true;
      copies[static_cast<std::size_t>(cp)] = graph_.add(copy);
    }
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const AsyncTpPiece& p = pieces[g];
      const AsyncTpUnit& unit = p.units[u];
      const TaskId copy = copies[g / static_cast<std::size_t>(k)];  // gpus: CP rank major, TP rank minor
      graph_.depend(before[g], copy);
      Task last = p.base;
      if (gather) {  // the last peer's shard
        last.duration_s = p.layers * unit.shard_gemm_s;
        last.model_flops = p.model_flops_per_s * p.layers * unit.gemm_s / k;
        last.hardware_flops = p.hardware_flops_per_s * p.layers * unit.gemm_s / k;
      } else {  // the sum of the tp partial outputs
        last.duration_s = p.layers * unit.exposed_s;
        last.model_flops = last.hardware_flops = 0;
        last.memory_bound_fraction = 1;
      }
      const TaskId end = graph_.add(last);
      graph_.depend(beside[g], end);
      graph_.depend(copy, end);
      built[g].pieces.back().last = end;
    }
  }
}

// The TP collectives torch_async leaves to NCCL, per pass, for an op of
// `kind` on `slice` (workloads/torch_async_tp.hpp): the reduce-scatters
// after the QKV and MLP-up dgrads, and the all-gathers recompute
// selective_op repeats.
int IterationBuilder::async_tp_plain_fold(PipeOpKind kind, const StageSlice& slice, CollectiveOp pass) const {
  const int layers = transformer_layers_of(model_, slice);
  if (pass == CollectiveOp::reduce_scatter)
    return async_tp_plain_reduce_scatters(kind) * layers;
  if (pass == CollectiveOp::all_gather &&
      (kind == PipeOpKind::backward || kind == PipeOpKind::backward_input))
    return op_selective_recompute_tp_all_gathers(plan_) * layers;
  return 0;
}

}  // namespace trainsim::workloads::detail
