// Expert parallelism in the task graph (workloads/expert_parallel.hpp for
// the layout; workloads/graph_builder/iteration_builder_state.hpp for the builder).
//
// All-to-alls: every op of a pipeline rank's list that runs MoE layers gets
// one all-to-all over each EP group (the members: the same pipeline and TP
// rank, ep consecutive positions of the dp x cp dimension), with the
// dispatches and combines of all the op's MoE layers folded into it
// (fold = ep_all_to_alls), after the op's compute and TP collectives on
// every member and before the member's next op. Like the TP collectives it
// sits on the op's output path: pipeline sends and the next op wait for it.
// The members run different data-parallel replicas of the same schedule, so
// the exchange also synchronises them, as it does in Megatron.
//
// Gradients: the dense part of a stage's parameters reduces over the whole
// data-parallel group (dp x cp GPUs), the routed experts' part over each
// expert data-parallel group (dp x cp / ep GPUs, positions equal modulo
// ep), one collective after the other on the DP stream, then each GPU's
// optimizer step over its parameters (ZeRO 1: its shard of each part),
// then with ZeRO 1 the all-gathers of the updated parameters.
#include <stdexcept>

#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

void IterationBuilder::add_expert_all_to_alls(int rank, int tp) {
  const int positions = plan_.data_parallel_size();
  const double bytes = ep_all_to_all_bytes(model_, plan_);
  // The loader refuses per-replica micro-batch shares with ep > 1: every
  // replica runs replica 0's schedule.
  const PipelineSchedule& sched = schedule(0);
  const auto& list = sched.per_rank[static_cast<std::size_t>(rank)];
  for (int first = 0; first < positions; first += plan_.ep) {
    std::vector<int> members;
    for (int j = first; j < first + plan_.ep; ++j)
      members.push_back(plan_.gpu_of(rank, j / plan_.cp, tp, j % plan_.cp));
    const int group = graph_.add_group(members);
    for (std::size_t k = 0; k < list.size(); ++k) {
      const PipeOp& op = list[k];
      const StageSlice slice = virtual_stage_slice(model_, plan_, sched.virtual_stage(rank, op.chunk));
      const int fold = ep_all_to_alls(plan_, op.kind, moe_layers_of(model_, slice));
      if (fold == 0)
        continue;
      const TaskId id =
          graph_.add(collective_task(CommKind::ep, CollectiveOp::all_to_all, group, rank, bytes,
                                     {.chunk = op.chunk, .micro_batch = op.micro_batch, .fold = fold}));
      for (int gpu : members) {
        auto& ops = ops_[idx(gpu)];
        const TaskId before = ops[k].done;
        graph_.depend(before, id);
        ops[k].done = id;
        if (k + 1 < ops.size())
          gate(id, gpu, k + 1);
        if (last_[idx(gpu)] == before)
          last_[idx(gpu)] = id;
        // Send and receive buffers of one pass (the folded passes reuse them).
        graph_.add_memory(id, gpu, MemoryEvent::At::start, MemoryKind::buffers, 2 * bytes);
        graph_.add_memory(id, gpu, MemoryEvent::At::end, MemoryKind::buffers, -2 * bytes);
      }
    }
  }
}

void IterationBuilder::add_expert_parallel_sync_and_step(int rank, int tp) {
  if (plan_.zero_stage >= 2 || plan_.overlap_grad_reduce)
    throw std::invalid_argument(
        "expert parallelism supports ZeRO stages 0 and 1 without overlap_grad_reduce");
  const std::vector<int> members = data_parallel_members(rank, tp);  // position order (cp fastest)
  const int d = static_cast<int>(members.size());
  const int de = plan_.expert_data_parallel_size();
  const double parameters = stage_parameters_per_gpu(model_, plan_, rank);
  const double experts = stage_expert_parameters_per_gpu(model_, plan_, rank);
  const double dense = parameters - experts;
  const double g = plan_.grad_bytes;
  const bool sharded = plan_.zero_stage >= 1;
  const CollectiveOp reduce = sharded ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce;

  // Per member: the last collective it waits for before its step.
  std::vector<TaskId> ready(members.size(), kNone);
  for (std::size_t i = 0; i < members.size(); ++i)
    ready[i] = last_[idx(members[i])];
  auto collective = [&](CollectiveOp op, int group, double bytes, const std::vector<std::size_t>& who,
                        const std::vector<TaskId>& after) {
    const TaskId id = graph_.add(collective_task(CommKind::dp, op, group, rank, bytes));
    for (TaskId a : after)
      graph_.depend(a, id);
    for (std::size_t i : who)
      ready[i] = id;
    return id;
  };
  std::vector<std::size_t> everyone(members.size());
  for (std::size_t i = 0; i < members.size(); ++i)
    everyone[i] = i;
  // Expert data-parallel groups: positions e, e + ep, e + 2 ep, ...
  std::vector<std::vector<std::size_t>> expert_groups(static_cast<std::size_t>(plan_.ep));
  for (std::size_t i = 0; i < members.size(); ++i)
    expert_groups[i % static_cast<std::size_t>(plan_.ep)].push_back(i);
  auto gpus_of = [&](const std::vector<std::size_t>& who) {
    std::vector<int> gpus;
    for (std::size_t i : who)
      gpus.push_back(members[i]);
    return gpus;
  };

  const int dense_group = d > 1 ? graph_.add_group(members) : -1;
  std::vector<int> expert_group_ids;
  if (de > 1)
    for (const auto& who : expert_groups)
      expert_group_ids.push_back(graph_.add_group(gpus_of(who)));

  TaskId dense_reduction = kNone;
  if (d > 1)
    dense_reduction = collective(reduce, dense_group, g * dense, everyone, std::vector<TaskId>(ready));
  if (de > 1)
    for (std::size_t e = 0; e < expert_groups.size(); ++e) {
      std::vector<TaskId> after;
      for (std::size_t i : expert_groups[e])
        after.push_back(ready[i]);
      if (dense_reduction != kNone)
        after.push_back(dense_reduction);  // one DP stream: after the dense reduction
      collective(reduce, expert_group_ids[e], g * experts, expert_groups[e], after);
    }

  const double local = sharded ? dense / d + experts / de : parameters;
  std::vector<TaskId> steps;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int gpu = members[i];
    const OpCost cost = cost_.optimizer(local, cluster_.gpu_of(gpu));
    Task step{.kind = TaskKind::optimizer,
              .gpu = gpu,
              .stage = rank,
              .duration_s = cost.duration_s,
              .memory_bound_fraction = cost.memory_bound_fraction};
    const TaskId id = graph_.add(step);
    graph_.depend(ready[i], id);
    if (last_[idx(gpu)] != kNone && last_[idx(gpu)] != ready[i])
      graph_.depend(last_[idx(gpu)], id);
    last_[idx(gpu)] = id;
    ready[i] = id;
    steps.push_back(id);
  }
  if (!sharded)
    return;
  // Every replica needs every updated parameter for the next iteration.
  TaskId dense_gather = kNone;
  if (d > 1)
    dense_gather = collective(CollectiveOp::all_gather, dense_group, 2.0 * dense, everyone, steps);
  if (de > 1)
    for (std::size_t e = 0; e < expert_groups.size(); ++e) {
      std::vector<TaskId> after;
      for (std::size_t i : expert_groups[e])
        after.push_back(steps[i]);
      if (dense_gather != kNone)
        after.push_back(dense_gather);
      collective(CollectiveOp::all_gather, expert_group_ids[e], 2.0 * experts, expert_groups[e], after);
    }
  for (std::size_t i = 0; i < members.size(); ++i)
    last_[idx(members[i])] = ready[i];
}

}  // namespace trainsim::workloads::detail
