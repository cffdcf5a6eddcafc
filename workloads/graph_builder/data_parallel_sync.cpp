// Gradient synchronisation over the data-parallel group (dp x cp GPUs
// holding the same parameters) for ZeRO stages 0 to 2, and the optimizer
// step (workloads/graph_builder/iteration_builder_state.hpp for the builder's layout).
//
//   stage 0   all-reduce of the gradients (Megatron DDP)
//   stage 1   reduce-scatter of the gradients, optimizer step on the local
//             1/D shard, all-gather of the updated bf16 parameters: the
//             all-reduce's volume (Megatron's distributed optimizer)
//   stage 2   as stage 1, but gradients are sharded too, so each micro-batch's
//             gradients are reduce-scattered after its backward (or weight
//             gradient) instead of accumulating in a full-size buffer:
//             m times the reduce-scatter traffic (DeepSpeed's behaviour);
//             with plan.grad_reduce_per_step they accumulate unsharded and
//             are reduce-scattered once, as stage 1's, the full-size buffer
//             held from the first backward to the reduction's end
//
// Without overlap_grad_reduce the reduction is one collective after the
// GPU's last backward (stage 2: after each). With it, the gradients go in
// buckets of grad_bucket_size, in the order the backward produces them (the
// logits first, the embedding last, per model chunk): a bucket fires as soon
// as the layer completing it has finished its backward on every member, on
// the DP stream, one collective after the other, while the backward goes
// on (Megatron's overlap_grad_reduce; torch DDP). For stages 0 and 1 only
// the last micro-batch's backward of each chunk completes gradients.
// plan.overlap_param_gather moves stages 1 and 2's parameter all-gather
// from after the step to under the first forward (param_gather_overlap.cpp).
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/precision.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

void IterationBuilder::add_gradient_sync_and_step(int rank, int tp) {
  const std::vector<int> members = data_parallel_members(rank, tp);
  const double parameters = stage_parameters_per_gpu(model_, plan_, rank);
  const int d = static_cast<int>(members.size());
  if (d <= 1) {
    add_optimizer_steps(rank, members, parameters, kNone);
    return;
  }
  const int group = graph_.add_group(members);
  const double g = plan_.grad_bytes;
  const CollectiveOp reduce = plan_.zero_stage == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
  const bool sharded_gradients = plan_.zero_stage == 2 && !plan_.grad_reduce_per_step;
  const bool accumulated_shards = plan_.zero_stage == 2 && plan_.grad_reduce_per_step;

  TaskId chain = kNone;
  auto add_reduction = [&](double bytes, int micro_batch, int chunk, int layer,
                           const std::vector<TaskId>& after) {
    const TaskId id =
        graph_.add(collective_task(CommKind::dp, reduce, group, rank, bytes,
                                   {.chunk = chunk, .micro_batch = micro_batch, .layer = layer}));
    for (TaskId a : after)
      graph_.depend(a, id);
    if (chain != kNone)
      graph_.depend(chain, id);
    chain = id;
    return id;
  };

  if (sharded_gradients || plan_.overlap_grad_reduce) {
    const double bucket_parameters = plan_.grad_bucket_size_bytes() / g;
    // Members walk their own op lists: with plan.dp_micro_batches the
    // replicas' lists differ in length, but (ZeRO 0/1, the only stages that
    // allow uneven shares) only each chunk's last gradient op reduces, and
    // it has the same pieces on every member. ZeRO-2 shares are even, so
    // the lists are the same.
    const auto& list = schedule(0).per_rank[static_cast<std::size_t>(rank)];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const PipeOp& op = list[k];
      if (!produces_gradients(op.kind))
        continue;
      if (!sharded_gradients && k != last_gradient_op(0, rank, op.chunk))
        continue;
      std::vector<std::size_t> member_op;  // the op on each member
      for (int gpu : members)
        member_op.push_back(sharded_gradients ? k : last_gradient_op(plan_.dp_rank_of(gpu), rank, op.chunk));
      const auto& pieces = ops_[idx(members.front())][k].pieces;
      double in_bucket = 0;
      for (std::size_t p = 0; p < pieces.size(); ++p) {
        in_bucket += pieces[p].parameters;
        if (sharded_gradients)
          for (int gpu : members)
            graph_.add_memory(ops_[idx(gpu)][k].pieces[p].first, gpu, MemoryEvent::At::start,
                              MemoryKind::buffers, g * pieces[p].parameters);
        const bool last_piece = p + 1 == pieces.size();
        if (!last_piece && (!plan_.overlap_grad_reduce || in_bucket < bucket_parameters))
          continue;
        std::vector<TaskId> after;
        for (std::size_t i = 0; i < members.size(); ++i) {
          const BuiltOp& built = ops_[idx(members[i])][member_op[i]];
          after.push_back(last_piece ? built.done : built.pieces[p].last);
        }
        const TaskId id = add_reduction(g * in_bucket, sharded_gradients ? op.micro_batch : -1, op.chunk,
                                        pieces[p].layer, after);
        if (sharded_gradients)
          for (int gpu : members)
            graph_.add_memory(id, gpu, MemoryEvent::At::end, MemoryKind::buffers, -g * in_bucket);
        in_bucket = 0;
      }
    }
  } else {
    std::vector<TaskId> after;
    for (int gpu : members)
      after.push_back(last_[idx(gpu)]);
    add_reduction(g * parameters, -1, 0, -1, after);
  }

  if (accumulated_shards) {
    // The accumulation buffer of each chunk, from its first gradient op to
    // the end of the reduction.
    const auto& list = schedule(0).per_rank[static_cast<std::size_t>(rank)];
    std::vector<bool> seen(static_cast<std::size_t>(plan_.virtual_stages), false);
    for (std::size_t k = 0; k < list.size(); ++k) {
      const auto c = static_cast<std::size_t>(list[k].chunk);
      if (!produces_gradients(list[k].kind) || seen[c])
        continue;
      seen[c] = true;
      double chunk_parameters = 0;
      for (const Piece& piece : ops_[idx(members.front())][k].pieces)
        chunk_parameters += piece.parameters;
      for (int gpu : members) {
        graph_.add_memory(ops_[idx(gpu)][k].pieces.front().first, gpu, MemoryEvent::At::start,
                          MemoryKind::buffers, g * chunk_parameters);
        graph_.add_memory(chain, gpu, MemoryEvent::At::end, MemoryKind::buffers, -g * chunk_parameters);
      }
    }
  }
  const std::vector<TaskId> steps =
      add_optimizer_steps(rank, members, plan_.zero_stage >= 1 ? parameters / d : parameters, chain);
  if (plan_.zero_stage >= 1 && plan_.overlap_param_gather) {
    // Under the next iteration's first forward (param_gather_overlap.cpp).
    add_overlapped_param_gathers(rank, members, group);
  } else if (plan_.zero_stage >= 1) {
    // Every member needs every updated parameter for the next iteration.
    const double fp8_share = parameters > 0 ? memory_.layer_parameters_on(rank) / parameters : 0.0;
    const TaskId id =
        graph_.add(collective_task(CommKind::dp, CollectiveOp::all_gather, group, rank,
                                   param_gather_bytes_per_parameter(plan_, fp8_share) * parameters));
    for (TaskId step : steps)
      graph_.depend(step, id);
    for (int gpu : members)
      last_[idx(gpu)] = id;
  }
}

}  // namespace trainsim::workloads::detail
