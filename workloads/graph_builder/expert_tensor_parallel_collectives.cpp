// The expert-TP collectives of an op when 1 < expert_tp < tp
// (workloads/expert_parallel.hpp, has_expert_tp_collectives). Megatron's
// alltoall dispatcher runs, per MoE layer: dispatch all-to-all over the EP
// group, all-gather over the expert-TP group, the experts, reduce-scatter
// over the expert-TP group, combine all-to-all; the backward the same
// chain in reverse. trainsim folds an op's layers, as it does the TP
// collectives and the all-to-alls: after the op's compute and TP
// collectives, each expert-TP group runs one all-gather then one
// reduce-scatter (fold = the op's MoE layers x passes), and the op's
// all-to-all waits for them (add_expert_all_to_alls chains after `done`).
// They run on the TP stream: the expert-TP group is part of the TP group,
// on its NVLink.
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

void IterationBuilder::add_expert_tp_collectives(const PipeOp& op, int rank, const StageSlice& slice,
                                                 const std::vector<int>& gpus, std::vector<BuiltOp>& built) {
  if (!has_expert_tp_collectives(model_, plan_))
    return;
  const std::vector<int> layers = moe_layer_indices(slice);
  const int fold = expert_tp_collective_pairs(plan_, op.kind, moe_layers_of(model_, slice));
  if (fold <= 0 || layers.empty())
    return;
  const auto etp = static_cast<std::size_t>(plan_.expert_tp());
  const double balanced = expert_tp_collective_bytes(model_, plan_);
  // gpus: CP rank major, TP rank minor, so that each run of etp entries is
  // one expert-TP group (Megatron's expert rank order tp-ep-dp).
  for (std::size_t first = 0; first < gpus.size(); first += etp) {
    std::vector<int> members(gpus.begin() + static_cast<std::ptrdiff_t>(first),
                             gpus.begin() + static_cast<std::ptrdiff_t>(first + etp));
    auto known = expert_tp_group_of_.find(members.front());
    if (known == expert_tp_group_of_.end())
      known = expert_tp_group_of_.emplace(members.front(), graph_.add_group(members)).first;
    // The members hold the same experts: under imbalanced routing they
    // receive the same (uneven) share, the mean over the op's layers.
    double load = 1;
    if (imbalanced_) {
      load = 0;
      for (int l : layers)
        load += load_factor(l, members.front());
      load /= static_cast<double>(layers.size());
    }
    const double bytes = balanced * load;
    TaskId previous = kNone;
    TaskId gather = kNone;
    for (CollectiveOp pass : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
      const TaskId id =
          graph_.add(collective_task(CommKind::tp, pass, known->second, rank, bytes,
                                     {.chunk = op.chunk, .micro_batch = op.micro_batch, .fold = fold}));
      if (previous != kNone)
        graph_.depend(previous, id);
      else
        for (std::size_t g = first; g < first + etp; ++g)
          graph_.depend(built[g].done, id);
      if (pass == CollectiveOp::all_gather)
        gather = id;
      previous = id;
    }
    for (std::size_t g = first; g < first + etp; ++g) {
      built[g].done = previous;
      // The gathered tokens live from the all-gather to the reduce-scatter.
      graph_.add_memory(gather, gpus[g], MemoryEvent::At::start, MemoryKind::buffers, bytes);
      graph_.add_memory(previous, gpus[g], MemoryEvent::At::end, MemoryKind::buffers, -bytes);
    }
  }
}

}  // namespace trainsim::workloads::detail
