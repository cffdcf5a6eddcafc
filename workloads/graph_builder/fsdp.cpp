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
//
// PyTorch frameworks (plan.framework) add the element-wise kernels FSDP
// itself launches on the compute stream. FSDP1 gathers into the flat
// parameter in place and reduce-scatters the flat gradient, so it adds only
// the cast of the bf16 gradients to a 4-byte reduce dtype (read 2P, write
// 4P). FSDP2 (torchtitan) shards every parameter on its own: after each
// all-gather, all_gather_copy_out copies the gathered bytes into the
// parameters (read and write 2P), and before each reduce-scatter the
// gradients are copied (and cast) into one contiguous input (read 2P, write
// g P); pytorch/pytorch#157027 measured these copies at about 1.4% of an
// iteration (Llama 3 70B, 8 GPUs).
//
// Hybrid sharding (plan.dp_shard): all of the above per shard group of
// dp_shard consecutive data-parallel GPUs, plus the all-reduces across the
// groups (add_hybrid_all_reduces).
//
// Gathered once, reduced once (Llama 3's FSDP, PyTorch's pipelining
// schedules): plan.reshard_after_forward = false gathers each unit before
// its first forward of the iteration only and keeps it until its last
// backward (no gather before the backward, none for the next micro-batch);
// plan.grad_reduce_per_step accumulates each unit's gradients unsharded
// (grad_bytes per element, 4 for FP32 accumulation) over the micro-batches
// and reduce-scatters them once, after the unit's last backward. Volume per
// iteration then 2P + g P instead of m (4P + g P).
#include <algorithm>
#include <map>

#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/precision.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

double IterationBuilder::gather_wire_bytes(const Piece& piece) const {
  if (piece.parameters <= 0)
    return 0;
  // The piece's transformer layer is FP8; the embedding or output layer it
  // may carry is not.
  const double layer = piece.layer >= 0 ? layer_parameters_per_gpu(model_, plan_, piece.layer) : 0.0;
  const double fp8_share = std::min(1.0, layer / piece.parameters);
  return param_gather_bytes_per_parameter(plan_, fp8_share) * piece.parameters;
}

void IterationBuilder::add_fsdp_sync_and_step(int rank, int tp) {
  const std::vector<int> all = data_parallel_members(rank, tp);
  const auto s = static_cast<std::size_t>(plan_.zero_shard_size());
  const std::size_t replicas = all.size() / s;
  const double g = plan_.grad_bytes;
  using At = MemoryEvent::At;

  // An FSDP kernel moving `bytes` on each GPU, before (start) or after the
  // compute task `id` of that GPU: it lengthens the task.
  const auto framework = plan_.framework;
  auto add_kernel = [&](TaskId id, int gpu, double bytes) {
    auto& task = graph_[id];
    const double added_s = cost_.memory_kernel_s(bytes, cluster_.gpu_of(gpu));
    const double total_s = task.duration_s + added_s;
    task.memory_bound_fraction =
        total_s > 0 ? (task.memory_bound_fraction * task.duration_s + added_s) / total_s : 0;
    task.duration_s = total_s;
  };

  // Replicas run the same list: FSDP requires even micro-batch shares.
  const auto& list = schedule(0).per_rank[static_cast<std::size_t>(rank)];
  // Per unit (chunk, model layer; -1 for a chunk's only piece): the first
  // and last (op, piece) that need its weights and that produce its
  // gradients, for the once-per-iteration gather and reduce-scatter.
  struct UnitUse {
    std::pair<std::size_t, std::size_t> first_weights{kNone, 0}, last_weights{kNone, 0};
    std::pair<std::size_t, std::size_t> first_gradients{kNone, 0}, last_gradients{kNone, 0};
  };
  std::map<std::pair<int, int>, UnitUse> units;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const auto& pieces = ops_[idx(all.front())][k].pieces;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      UnitUse& use = units[{list[k].chunk, pieces[p].layer}];
      if (needs_weights(list[k].kind)) {
        if (use.first_weights.first == kNone)
          use.first_weights = {k, p};
        use.last_weights = {k, p};
      }
      if (produces_gradients(list[k].kind)) {
        if (use.first_gradients.first == kNone)
          use.first_gradients = {k, p};
        use.last_gradients = {k, p};
      }
    }
  }
  const bool keep_gathered = !plan_.reshard_after_forward;
  const bool reduce_once = plan_.grad_reduce_per_step;
  // The reduce-scatter of every unit, per shard group, in unit order.
  std::vector<std::vector<TaskId>> reduces(replicas);
  for (std::size_t r = 0; r < replicas; ++r) {
    const std::vector<int> members(all.begin() + static_cast<std::ptrdiff_t>(r * s),
                                   all.begin() + static_cast<std::ptrdiff_t>((r + 1) * s));
    const int group = graph_.add_group(members);
    TaskId previous_gather = kNone;
    // (op, piece) of every gathered unit so far, to bound the prefetch.
    std::vector<std::pair<std::size_t, std::size_t>> gathered;
    for (std::size_t k = 0; k < list.size(); ++k) {
      const PipeOp& op = list[k];
      const auto& pieces = ops_[idx(members.front())][k].pieces;
      for (std::size_t p = 0; p < pieces.size(); ++p) {
        const double parameters = pieces[p].parameters;
        const CollectiveAt at{.chunk = op.chunk, .micro_batch = op.micro_batch, .layer = pieces[p].layer};
        const UnitUse& use = units.at({op.chunk, pieces[p].layer});
        const std::pair<std::size_t, std::size_t> here{k, p};
        // Kept gathered (keep_gathered): gathered at the unit's first op that
        // needs its weights and freed after its last; its later ops waited
        // for that gather. Otherwise gathered for each op that needs the
        // weights and freed after it.
        const bool gather_here = needs_weights(op.kind) && (!keep_gathered || here == use.first_weights);
        if (gather_here) {
          const TaskId id = graph_.add(collective_task(CommKind::dp, CollectiveOp::all_gather, group, rank,
                                                       gather_wire_bytes(pieces[p]), at));
          if (previous_gather != kNone)
            graph_.depend(previous_gather, id);
          if (gathered.size() >= 2) {
            const auto [k2, p2] = gathered[gathered.size() - 2];
            for (int gpu : members)
              graph_.depend(ops_[idx(gpu)][k2].pieces[p2].last, id);
          }
          const auto [kl, pl] = keep_gathered ? use.last_weights : here;
          for (int gpu : members) {
            const Piece& piece = ops_[idx(gpu)][k].pieces[p];
            if (framework == Framework::pytorch_fsdp2)
              add_kernel(piece.first, gpu, 2 * memory_.gathered_bytes(parameters));
            graph_.depend(id, piece.first);
            if (piece.exchange != kNone)
              graph_.depend(id, piece.exchange);
            graph_.add_memory(id, gpu, At::start, MemoryKind::buffers, memory_.gathered_bytes(parameters));
            graph_.add_memory(ops_[idx(gpu)][kl].pieces[pl].last, gpu, At::end, MemoryKind::buffers,
                              -memory_.gathered_bytes(parameters));
          }
          gathered.emplace_back(k, p);
          previous_gather = id;
        }
        if (reduce_once && produces_gradients(op.kind) && here == use.first_gradients)
          for (int gpu : members)
            graph_.add_memory(ops_[idx(gpu)][k].pieces[p].first, gpu, At::start, MemoryKind::buffers,
                              g * parameters);
        if (produces_gradients(op.kind) && (!reduce_once || here == use.last_gradients)) {
          const TaskId id = graph_.add(
              collective_task(CommKind::dp, CollectiveOp::reduce_scatter, group, rank, g * parameters, at));
          if (!reduces[r].empty())
            graph_.depend(reduces[r].back(), id);
          for (int gpu : members) {
            const Piece& piece = ops_[idx(gpu)][k].pieces[p];
            if (framework == Framework::pytorch_fsdp2 || (framework == Framework::pytorch_fsdp && g > 2))
              add_kernel(piece.last, gpu, (2 + g) * parameters);
            graph_.depend(piece.last, id);
            if (!reduce_once)
              graph_.add_memory(piece.first, gpu, At::start, MemoryKind::buffers, g * parameters);
            graph_.add_memory(id, gpu, At::end, MemoryKind::buffers, -g * parameters);
          }
          reduces[r].push_back(id);
        }
      }
    }
  }
  if (replicas == 1) {
    add_optimizer_steps(rank, all, stage_parameters_per_gpu(model_, plan_, rank) / static_cast<double>(s),
                        reduces[0].empty() ? kNone : reduces[0].back());
    return;
  }
  add_hybrid_all_reduces(rank, all, reduces);
}

// Hybrid sharding: the GPUs at the same position of every shard group hold
// the same shard, so after each unit's reduce-scatter they all-reduce it
// (g P / dp_shard bytes), and their optimizer steps wait for the last one.
// PyTorch runs a rank's all-reduce behind its reduce-scatter on the same
// stream (FSDP1's post-backward stream; FSDP2's reduce-scatter stream), so
// the next unit's reduce-scatter also waits for this unit's all-reduces.
void IterationBuilder::add_hybrid_all_reduces(int rank, const std::vector<int>& all,
                                              const std::vector<std::vector<TaskId>>& reduces) {
  const std::size_t replicas = reduces.size();
  const std::size_t s = all.size() / replicas;
  const std::size_t units = reduces[0].size();
  const double shard_parameters = stage_parameters_per_gpu(model_, plan_, rank) / static_cast<double>(s);
  std::vector<std::vector<int>> positions(s);
  std::vector<int> groups(s);
  for (std::size_t j = 0; j < s; ++j) {
    for (std::size_t r = 0; r < replicas; ++r)
      positions[j].push_back(all[r * s + j]);
    groups[j] = graph_.add_group(positions[j]);
  }
  std::vector<TaskId> previous(s, kNone);
  for (std::size_t u = 0; u < units; ++u) {
    // Copied: adding tasks may move the graph's task storage.
    const Task scatter = graph_[reduces[0][u]];
    const CollectiveAt at{.chunk = scatter.chunk, .micro_batch = scatter.micro_batch, .layer = scatter.layer};
    std::vector<TaskId> current(s);
    for (std::size_t j = 0; j < s; ++j) {
      current[j] = graph_.add(collective_task(CommKind::dp, CollectiveOp::all_reduce, groups[j], rank,
                                              scatter.bytes / static_cast<double>(s), at));
      for (std::size_t r = 0; r < replicas; ++r)
        graph_.depend(reduces[r][u], current[j]);
      if (previous[j] != kNone)
        graph_.depend(previous[j], current[j]);
    }
    if (u + 1 < units)
      for (std::size_t r = 0; r < replicas; ++r)
        for (TaskId id : current)
          graph_.depend(id, reduces[r][u + 1]);
    previous = current;
  }
  for (std::size_t j = 0; j < s; ++j)
    add_optimizer_steps(rank, positions[j], shard_parameters, previous[j]);
}

}  // namespace trainsim::workloads::detail
