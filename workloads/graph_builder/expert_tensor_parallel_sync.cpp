// Gradient synchronisation and optimizer step of a MoE stage whose experts
// are not split like the dense layers (plan.expert_tensor_parallel below
// tp: Megatron's MoE parallel folding). The dense parameters of each TP
// rank reduce over that rank's data-parallel group (dp x cp GPUs), as
// without folding; the routed experts' reduce over the expert data-parallel
// groups of workloads/expert_parallel.hpp, which cross TP ranks (with
// expert_tp 1 and ep < tp x dp x cp: the GPUs of the stage equal modulo
// ep). One DP stream per GPU: each expert reduction waits for its members'
// dense ones. Then each GPU's optimizer step over its parameters (ZeRO 1:
// its shard of each part), then with ZeRO 1 the all-gathers of the updated
// bf16 parameters, dense first. Megatron's distributed optimizer keeps the
// same two kinds of buffers (dense over the DP group, experts over the
// expert-DP group: distributed/param_and_grad_buffer, expt_dp_group).
#include <stdexcept>

#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

void IterationBuilder::add_folded_expert_sync_and_step(int rank) {
  if (plan_.zero_stage >= 2 || plan_.overlap_grad_reduce)
    throw std::invalid_argument(
        "expert parallelism supports ZeRO stages 0 and 1 without overlap_grad_reduce");
  const int d = plan_.data_parallel_size();
  const int de = plan_.expert_data_parallel_size();
  const double parameters = stage_parameters_per_gpu(model_, plan_, rank);
  const double experts = stage_expert_parameters_per_gpu(model_, plan_, rank);
  const double dense = parameters - experts;
  const double g = plan_.grad_bytes;
  const bool sharded = plan_.zero_stage >= 1;
  const CollectiveOp reduce = sharded ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;

  std::vector<std::vector<int>> dense_groups;
  for (int tp = 0; tp < plan_.tp; ++tp)
    dense_groups.push_back(data_parallel_members(rank, tp));
  const std::vector<std::vector<int>> expert_groups = expert_data_parallel_groups(plan_, rank);

  // Per GPU of the stage: the last task its step (or next collective) waits for.
  const int first = plan_.gpu_of(rank, 0, 0);
  const int gpus = plan_.tp * plan_.cp * plan_.dp;
  auto slot = [&](int gpu) { return static_cast<std::size_t>(gpu - first); };
  std::vector<TaskId> ready(static_cast<std::size_t>(gpus), kNone);
  for (int i = 0; i < gpus; ++i)
    ready[static_cast<std::size_t>(i)] = last_[idx(first + i)];

  auto collective = [&](CollectiveOp op, const std::vector<int>& members, double bytes) {
    const int group = graph_.add_group(members);
    const TaskId id = graph_.add(collective_task(CommKind::dp, op, group, rank, bytes));
    for (int gpu : members)
      if (ready[slot(gpu)] != kNone)
        graph_.depend(ready[slot(gpu)], id);
    for (int gpu : members)
      ready[slot(gpu)] = id;
  };
  if (d > 1)
    for (const auto& members : dense_groups)
      collective(reduce, members, g * dense);
  if (de > 1)
    for (const auto& members : expert_groups)
      collective(reduce, members, g * experts);

  const double local = sharded ? dense / d + experts / de : parameters;
  for (int i = 0; i < gpus; ++i) {
    const int gpu = first + i;
    const OpCost cost = cost_.optimizer(local, cluster_.gpu_of(gpu));
    const TaskId id = graph_.add(Task{.kind = TaskKind::optimizer,
                                      .gpu = gpu,
                                      .stage = rank,
                                      .duration_s = cost.duration_s,
                                      .memory_bound_fraction = cost.memory_bound_fraction});
    TaskId& before = ready[static_cast<std::size_t>(i)];
    before = add_tied_embedding_sync(rank, gpu, before);         // tied_embedding_sync.cpp
    before = add_parameter_copy_sync(rank, gpu, before, local);  // dualpipe_copy_sync.cpp
    graph_.depend(before, id);
    if (last_[idx(gpu)] != kNone && last_[idx(gpu)] != before)
      graph_.depend(last_[idx(gpu)], id);
    last_[idx(gpu)] = id;
    before = id;
  }
  if (sharded) {
    // Every replica needs every updated parameter for the next iteration.
    if (d > 1)
      for (const auto& members : dense_groups)
        collective(CollectiveOp::all_gather, members, 2.0 * dense);
    if (de > 1)
      for (const auto& members : expert_groups)
        collective(CollectiveOp::all_gather, members, 2.0 * experts);
  }
  for (int i = 0; i < gpus; ++i)
    last_[idx(first + i)] = ready[static_cast<std::size_t>(i)];
}

}  // namespace trainsim::workloads::detail
