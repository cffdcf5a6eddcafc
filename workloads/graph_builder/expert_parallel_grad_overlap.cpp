// plan.overlap_grad_reduce with expert parallelism (expert_parallel_sync.cpp
// calls it; expert_tp = tp): Megatron-core's DDP keeps the expert
// parameters in buffers of their own, reduced over the expert data-parallel
// group, and the dense ones in the data-parallel group's buffers
// (distributed_data_parallel.py: expert_parallel_buffers beside buffers,
// each with its bucket groups). Both overlap the backward: walking each
// model chunk's last gradient op in the order the backward produces the
// gradients, a dense bucket fires over the whole data-parallel group once
// grad_bucket_size of dense parameters are complete on every member, and an
// expert bucket over each expert data-parallel group once as many expert
// parameters are, each at the latest at the chunk's last piece. All of a
// GPU's reductions run on one DP stream, one after the other. Memory: with
// ZeRO 0 and 1 the gradients sit in the full-size buffer either way
// (memory_model.cpp), so overlapping adds none.
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

double IterationBuilder::piece_expert_parameters(const BuiltOp& built, const Piece& piece) const {
  const StageSlice slice = virtual_stage_slice(model_, plan_, built.virtual_stage);
  if (piece.layer < 0)  // the whole op
    return stage_expert_parameters_of_slice(slice);
  const StageSlice one{.layers = 1,
                       .first_layer = piece.layer,
                       .embedding = false,
                       .logits = slice.logits && piece.layer == slice.first_layer + slice.layers - 1};
  return stage_expert_parameters_of_slice(one);
}

double IterationBuilder::stage_expert_parameters_of_slice(const StageSlice& slice) const {
  double experts = 0;
  for (int l = slice.first_layer; l < slice.first_layer + slice.layers; ++l)
    experts += layer_expert_parameters_per_gpu(model_, plan_, l);
  return experts + mtp_expert_parameters_per_gpu(model_, plan_, slice);
}

void IterationBuilder::add_overlapped_expert_reductions(
    int rank, const std::vector<int>& members, int dense_group,
    const std::vector<std::vector<std::size_t>>& expert_groups, const std::vector<int>& expert_group_ids,
    std::vector<TaskId>& ready) {
  const double g = plan_.grad_bytes;
  const CollectiveOp reduce = plan_.zero_stage >= 1 ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;
  const double bucket_parameters = plan_.grad_bucket_size_bytes() / g;
  const std::size_t groups = expert_groups.size();
  std::vector<std::size_t> group_of(members.size());
  for (std::size_t e = 0; e < groups; ++e)
    for (std::size_t i : expert_groups[e])
      group_of[i] = e;
  TaskId dense_chain = kNone;                       // the last dense reduction (every member)
  std::vector<TaskId> expert_chain(groups, kNone);  // each expert group's last
  auto add = [&](int group, double bytes, int chunk, int layer, const std::vector<TaskId>& after) {
    const TaskId id = graph_.add(collective_task(CommKind::dp, reduce, group, rank, bytes,
                                                 {.chunk = chunk, .micro_batch = -1, .layer = layer}));
    for (TaskId a : after)
      if (a != kNone)
        graph_.depend(a, id);
    return id;
  };
  const auto& list = schedule(0).per_rank[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < list.size(); ++k) {
    const PipeOp& op = list[k];
    if (!produces_gradients(op.kind) || k != last_gradient_op(0, rank, op.chunk))
      continue;
    std::vector<std::size_t> member_op;  // the op on each member (the same lists: ep > 1 refuses shares)
    for (int gpu : members)
      member_op.push_back(last_gradient_op(plan_.dp_rank_of(gpu), rank, op.chunk));
    const BuiltOp& first = ops_[idx(members.front())][k];
    double dense_in_bucket = 0, expert_in_bucket = 0;
    for (std::size_t p = 0; p < first.pieces.size(); ++p) {
      const double experts = piece_expert_parameters(first, first.pieces[p]);
      dense_in_bucket += first.pieces[p].parameters - experts;
      expert_in_bucket += experts;
      const bool last_piece = p + 1 == first.pieces.size();
      // A deferred weight gradient (plan.delay_wgrad_compute) completes the
      // piece's gradients off the op's output path: the bucket waits for it too.
      auto done_on = [&](std::size_t i) {
        const BuiltOp& built = ops_[idx(members[i])][member_op[i]];
        return last_piece ? built.done : built.pieces[p].last;
      };
      auto weight_on = [&](std::size_t i) {
        return ops_[idx(members[i])][member_op[i]].pieces[p].weight_gradient;
      };
      if (dense_group >= 0 && dense_in_bucket > 0 && (last_piece || dense_in_bucket >= bucket_parameters)) {
        std::vector<TaskId> after{dense_chain};
        for (std::size_t i = 0; i < members.size(); ++i) {
          after.push_back(done_on(i));
          after.push_back(weight_on(i));
        }
        for (TaskId e : expert_chain)
          after.push_back(e);
        dense_chain = add(dense_group, g * dense_in_bucket, op.chunk, first.pieces[p].layer, after);
        dense_in_bucket = 0;
      }
      if (!expert_group_ids.empty() && expert_in_bucket > 0 &&
          (last_piece || expert_in_bucket >= bucket_parameters)) {
        for (std::size_t e = 0; e < groups; ++e) {
          std::vector<TaskId> after{dense_chain, expert_chain[e]};
          for (std::size_t i : expert_groups[e]) {
            after.push_back(done_on(i));
            after.push_back(weight_on(i));
          }
          expert_chain[e] =
              add(expert_group_ids[e], g * expert_in_bucket, op.chunk, first.pieces[p].layer, after);
        }
        expert_in_bucket = 0;
      }
    }
  }
  // Each member's step waits for its last reduction: of its two chains
  // the one made later (which waits for the other).
  for (std::size_t i = 0; i < members.size(); ++i) {
    const TaskId e = groups > 0 ? expert_chain[group_of[i]] : kNone;
    const TaskId last = e == kNone ? dense_chain : dense_chain == kNone ? e : std::max(e, dense_chain);
    if (last != kNone)
      ready[i] = last;
  }
}

}  // namespace trainsim::workloads::detail
