// ZeRO-3 / FSDP (zero_stage 3): parameters, gradients and optimizer state
// sharded over the data-parallel group (dp x cp GPUs). Each layer is one
// FSDP unit (the embedding rides with the first layer of the first virtual
// stage, the logits with the last layer of the last): before every forward,
// backward or zero-bubble input gradient of a unit, the group all-gathers
// its bf16 parameters; after every backward or weight gradient of a unit,
// it reduce-scatters the unit's gradients. Gradients are reduce-scattered
// every micro-batch (torch FSDP without no_sync), so a pipeline stage moves
// m times the per-micro-batch traffic.
//
// Prefetch: the all-gathers run one after the other on the DP stream, and
// the gather of a unit may start once the unit two before it has finished
// computing, so the next unit's parameters arrive while the current one
// computes (FSDP's forward and backward prefetch) with at most two units
// gathered at once. Reduce-scatters run in order behind the units that
// produced their gradients. A gathered unit is freed when its compute ends;
// its unsharded gradients when their reduce-scatter ends.
//
// Volume per micro-batch, for a stage's parameters P: two all-gathers of 2P
// bytes (forward, backward) and one reduce-scatter of g P bytes, i.e. 3x the
// bytes that one all-reduce of the gradients would carry, and 1.5x its
// traffic on the wire (ZeRO paper: 3 Psi against 2 Psi).
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

void IterationBuilder::add_fsdp_sync_and_step(int rank, int tp) {
  const std::vector<int> members = data_parallel_members(rank, tp);
  const int d = static_cast<int>(members.size());
  const int group = graph_.add_group(members);
  const double g = plan_.grad_bytes;
  using At = MemoryEvent::At;

  TaskId previous_gather = kNone, previous_reduce = kNone;
  // (op, piece) of every gathered unit so far, to bound the prefetch.
  std::vector<std::pair<std::size_t, std::size_t>> gathered;
  // Replicas run the same list: FSDP requires even micro-batch shares.
  const auto& list = schedule(0).per_rank[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < list.size(); ++k) {
    const PipeOp& op = list[k];
    const auto& pieces = ops_[idx(members.front())][k].pieces;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      const double parameters = pieces[p].parameters;
      const CollectiveAt at{.chunk = op.chunk, .micro_batch = op.micro_batch, .layer = pieces[p].layer};
      if (needs_weights(op.kind)) {
        const TaskId id = graph_.add(collective_task(CommKind::dp, CollectiveOp::all_gather, group, rank,
                                                     memory_.gathered_bytes(parameters), at));
        if (previous_gather != kNone)
          graph_.depend(previous_gather, id);
        if (gathered.size() >= 2) {
          const auto [k2, p2] = gathered[gathered.size() - 2];
          for (int gpu : members)
            graph_.depend(ops_[idx(gpu)][k2].pieces[p2].last, id);
        }
        for (int gpu : members) {
          const Piece& piece = ops_[idx(gpu)][k].pieces[p];
          graph_.depend(id, piece.first);
          if (piece.exchange != kNone)
            graph_.depend(id, piece.exchange);
          graph_.add_memory(id, gpu, At::start, MemoryKind::buffers, memory_.gathered_bytes(parameters));
          graph_.add_memory(piece.last, gpu, At::end, MemoryKind::buffers,
                            -memory_.gathered_bytes(parameters));
        }
        gathered.emplace_back(k, p);
        previous_gather = id;
      }
      if (produces_gradients(op.kind)) {
        const TaskId id = graph_.add(
            collective_task(CommKind::dp, CollectiveOp::reduce_scatter, group, rank, g * parameters, at));
        if (previous_reduce != kNone)
          graph_.depend(previous_reduce, id);
        for (int gpu : members) {
          const Piece& piece = ops_[idx(gpu)][k].pieces[p];
          graph_.depend(piece.last, id);
          graph_.add_memory(piece.first, gpu, At::start, MemoryKind::buffers, g * parameters);
          graph_.add_memory(id, gpu, At::end, MemoryKind::buffers, -g * parameters);
        }
        previous_reduce = id;
      }
    }
  }
  add_optimizer_steps(rank, members, stage_parameters_per_gpu(model_, plan_, rank) / d, previous_reduce);
}

}  // namespace trainsim::workloads::detail
