// Expert parallelism in the task graph (workloads/expert_parallel.hpp for
// the layout; workloads/graph_builder/iteration_builder_state.hpp for the builder).
//
// All-to-alls: every op of a pipeline rank's list that runs MoE layers gets
// one all-to-all over each EP group (the members: the same pipeline and TP
// rank, ep consecutive positions of the dp x cp dimension), with the
// dispatches and combines of all the op's MoE layers folded into it
// (fold = ep_all_to_alls), after the op's compute and TP collectives on
// every member and before the member's next op (with expert_tp < tp the
// group spans TP ranks: expert_parallel_groups; deepep with 1 < expert_tp <
// tp exchanges over the etp x ep GPUs of a block: moe_dispatch_groups). Like
// the TP collectives it
// sits on the op's output path: pipeline sends and the next op wait for it.
// The members run different data-parallel replicas of the same schedule, so
// the exchange also synchronises them, as it does in Megatron.
//
// Gradients: the dense part of a stage's parameters reduces over the whole
// data-parallel group (dp x cp GPUs), the routed experts' part over each
// expert data-parallel group (dp x cp / ep GPUs, positions equal modulo
// ep), one collective after the other on the DP stream, then each GPU's
// optimizer step over its parameters (ZeRO 1: its shard of each part),
// then with ZeRO 1 the all-gathers of the updated parameters. With
// plan.overlap_grad_reduce the reductions run in buckets during the
// backward instead (expert_parallel_grad_overlap.cpp).
#include <stdexcept>

#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/skewed_touch.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads::detail {

std::vector<int> IterationBuilder::moe_layer_indices(const StageSlice& slice) const {
  return workloads::moe_layer_indices(model_, slice);
}

double IterationBuilder::load_factor(int layer, int gpu) const {
  const auto& share = loads_.of_layer(layer);
  const int r = expert_parallel_rank_of(plan_, gpu);
  double load = 0;
  const int local = model_.moe.experts / plan_.ep;
  for (int e = r * local; e < (r + 1) * local; ++e)
    load += share[static_cast<std::size_t>(e)];
  return load * plan_.ep;
}

double IterationBuilder::expert_load_extra_s(PipeOpKind kind, const StageSlice& slice, int gpu) const {
  double extra = 0;
  for (int l : moe_layer_indices(slice))
    extra += cost_.moe_load_extra_s(kind, load_factor(l, gpu), cluster_.gpu_of(gpu));
  return extra;
}

// all_to_all: each rank sends every rank its tokens' copies routed to that
// rank's experts, B x L_j to rank j (B = the rank's buffer, L_j = rank j's
// share of the layer's copies); combine sends the outputs back, B x L_i
// from rank j to rank i. A pass pair of a layer moves B (L_i + L_j) from i
// to j; the backward's gradients the same; full recomputation twice.
// deepep: each token once per GPU it has experts on (workloads/moe_dispatch.hpp;
// with 1 < expert_tp < tp once per GPU holding shards of them, over the
// expert-TP x EP block: moe_dispatch_groups).
Exchange IterationBuilder::exchange_of(PipeOpKind kind, const StageSlice& slice, const EpNodes& nodes) const {
  // deepep with 1 < expert_tp < tp: over the etp x ep GPUs of a block.
  const auto n = static_cast<std::size_t>(plan_.ep) *
                 static_cast<std::size_t>(dispatch_spans_expert_tp(model_, plan_) ? plan_.expert_tp() : 1);
  const int pairs = ep_all_to_alls(plan_, kind, 1) / 2;
  Exchange x;
  x.send_bytes.assign(n * n, 0.0);
  if (plan_.moe_dispatcher == MoeDispatcher::deepep) {
    // Loads exist only under imbalanced routing; a balanced layer's shares
    // stay empty (the closed forms).
    std::vector<DeepepLayer> layers;
    const EpNodes sets = deepep_expert_sets(model_, plan_, nodes);
    for (int l : moe_layer_indices(slice)) {
      DeepepLayer layer;
      if (imbalanced_) {
        // One Monte Carlo per layer and layout, shared by the forward's and
        // the backward's exchanges.
        auto known = touch_of_.find({l, sets.nodes, sets.ranks_per_node});
        if (known == touch_of_.end())
          known = touch_of_
                      .emplace(std::make_tuple(l, sets.nodes, sets.ranks_per_node),
                               skewed_touch_probabilities(model_.moe, plan_.ep, sets, loads_.of_layer(l)))
                      .first;
        layer = {.expert_share = loads_.of_layer(l), .touch = known->second};
      }
      layers.push_back(std::move(layer));
    }
    DeepepTraffic t = deepep_traffic(model_, plan_, nodes, layers, pairs);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        x.send_bytes[i * n + j] = t.dispatch[i * n + j] + t.combine[j * n + i];
    x.dispatch_bytes = std::move(t.dispatch);
    x.combine_bytes = std::move(t.combine);
    x.node_share = t.node_share;
    x.node_shares = std::move(t.node_shares);
    return x;
  }
  std::vector<std::vector<double>> factors;
  // Loads exist only under imbalanced routing; otherwise every rank's is 1.
  for (int l : moe_layer_indices(slice))
    factors.push_back(imbalanced_ ? rank_load_factors(loads_.of_layer(l), plan_.ep)
                                  : std::vector<double>(static_cast<std::size_t>(plan_.ep), 1.0));
  const double bytes = ep_all_to_all_bytes(model_, plan_);
  for (const auto& f : factors)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j)
          x.send_bytes[i * n + j] += bytes * pairs * (f[i] + f[j]) / static_cast<double>(n);
  return x;
}

int IterationBuilder::exchange_index(PipeOpKind kind, const StageSlice& slice, const EpNodes& nodes) {
  const auto key = std::make_tuple(ep_all_to_alls(plan_, kind, 1), moe_layer_indices(slice), nodes.nodes,
                                   nodes.ranks_per_node);
  auto known = exchange_of_.find(key);
  if (known == exchange_of_.end())
    known = exchange_of_.emplace(key, graph_.add_exchange(exchange_of(kind, slice, nodes))).first;
  return known->second;
}

void IterationBuilder::add_expert_all_to_alls(int rank, const std::vector<int>& members) {
  const double bytes = ep_all_to_all_bytes(model_, plan_);
  // The loader refuses per-replica micro-batch shares with ep > 1: every
  // replica runs replica 0's schedule.
  const PipelineSchedule& sched = schedule(0);
  const auto& list = sched.per_rank[static_cast<std::size_t>(rank)];
  const int group = graph_.add_group(members);
  const bool deepep = plan_.moe_dispatcher == MoeDispatcher::deepep;
  EpNodes nodes;
  if (deepep) {
    std::vector<int> domains;
    for (int gpu : members)
      domains.push_back(cluster_.locate(gpu).domain);
    nodes = ep_nodes_of(domains);
    if (!nodes.uniform())
      throw std::invalid_argument(
          "moe_dispatcher deepep needs each EP group's GPUs in equal consecutive shares of NVLink domains");
  }
  for (std::size_t k = 0; k < list.size(); ++k) {
    const PipeOp& op = list[k];
    const StageSlice slice = virtual_stage_slice(model_, plan_, sched.virtual_stage(rank, op.chunk));
    // One all-to-all per MoE layer: the busiest GPU sets the pace of
    // each (imbalance), or the other op of a merged F&B computes under it.
    // Or it defers its weight gradients under them (plan.delay_wgrad_compute).
    if (imbalanced_ || overlaps_previous(0, rank, k) || overlaps_previous(0, rank, k + 1) ||
        defers_weight_gradients(0, rank, k)) {
      add_per_layer_all_to_alls(op, k, slice, group, members, nodes);
      continue;
    }
    const int fold = ep_all_to_alls(plan_, op.kind, moe_layers_of(model_, slice));
    if (fold == 0)
      continue;
    Task task = collective_task(CommKind::ep, CollectiveOp::all_to_all, group, rank, bytes,
                                {.chunk = op.chunk,
                                 .micro_batch = op.micro_batch,
                                 .fold = fold,
                                 .algorithm = deepep ? platforms::CollectiveAlgorithm::deepep
                                                     : platforms::CollectiveAlgorithm::automatic});
    // DeepEP's bytes are not the even all-to-all's: its exchange says them.
    if (deepep)
      task.exchange = exchange_index(op.kind, slice, nodes);
    const TaskId id = graph_.add(task);
    for (int gpu : members) {
      auto& ops = ops_[idx(gpu)];
      const TaskId before = ops[k].done;
      graph_.depend(before, id);
      ops[k].done = id;
      gate_next(id, gpu, k);
      if (last_[idx(gpu)] == before)
        last_[idx(gpu)] = id;
      // Send and receive buffers of one pass (the folded passes reuse them).
      graph_.add_memory(id, gpu, MemoryEvent::At::start, MemoryKind::buffers, 2 * bytes);
      graph_.add_memory(id, gpu, MemoryEvent::At::end, MemoryKind::buffers, -2 * bytes);
    }
  }
}

// One all-to-all per piece holding MoE layers (one piece per layer: see
// split_per_layer), each moving the receivers' loads: between two pieces
// it waits for every member's piece and gates every member's next one; the
// last piece's sits after the op's TP collectives, as the balanced op's
// does.
void IterationBuilder::add_per_layer_all_to_alls(const PipeOp& op, std::size_t k, const StageSlice& slice,
                                                 int group, const std::vector<int>& members,
                                                 const EpNodes& nodes) {
  const double bytes = ep_all_to_all_bytes(model_, plan_);
  const std::vector<Piece>& pieces = ops_[idx(members.front())][k].pieces;
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    StageSlice piece = slice;
    if (pieces.size() > 1) {
      const int layer = pieces[p].layer;
      piece = {.layers = 1,
               .first_layer = layer,
               .embedding = slice.embedding && layer == slice.first_layer,
               .logits = slice.logits && layer == slice.first_layer + slice.layers - 1};
    }
    const int fold = ep_all_to_alls(plan_, op.kind, moe_layers_of(model_, piece));
    if (fold == 0)
      continue;
    const bool last = p + 1 == pieces.size();
    Task task = collective_task(CommKind::ep, CollectiveOp::all_to_all, group,
                                plan_.pp_rank_of(members.front()), bytes,
                                {.chunk = op.chunk,
                                 .micro_batch = op.micro_batch,
                                 .layer = pieces.size() > 1 ? pieces[p].layer : -1,
                                 .fold = fold,
                                 .algorithm = plan_.moe_dispatcher == MoeDispatcher::deepep
                                                  ? platforms::CollectiveAlgorithm::deepep
                                                  : platforms::CollectiveAlgorithm::automatic});
    // Loads are per layer, the same in every micro-batch and EP group: one
    // exchange per (layers, passes) serves them all. Balanced pairwise
    // all-to-alls need none.
    if (imbalanced_ || plan_.moe_dispatcher == MoeDispatcher::deepep)
      task.exchange = exchange_index(op.kind, piece, nodes);
    const TaskId id = graph_.add(task);
    for (int gpu : members) {
      auto& ops = ops_[idx(gpu)];
      if (last) {
        const TaskId before = ops[k].done;
        graph_.depend(before, id);
        ops[k].done = id;
        gate_next(id, gpu, k);
        if (last_[idx(gpu)] == before)
          last_[idx(gpu)] = id;
      } else {
        graph_.depend(ops[k].pieces[p].last, id);
        graph_.depend(id, ops[k].pieces[p + 1].first);
      }
      graph_.add_memory(id, gpu, MemoryEvent::At::start, MemoryKind::buffers, 2 * bytes);
      graph_.add_memory(id, gpu, MemoryEvent::At::end, MemoryKind::buffers, -2 * bytes);
    }
  }
}

void IterationBuilder::add_expert_parallel_sync_and_step(int rank, int tp) {
  if (plan_.zero_stage >= 2 || plan_.overlap_param_gather)
    throw std::invalid_argument(
        "expert parallelism supports ZeRO stages 0 and 1 without overlap_param_gather");
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
  if (plan_.overlap_grad_reduce)  // during the backward (expert_parallel_grad_overlap.cpp)
    add_overlapped_expert_reductions(rank, members, dense_group, expert_groups, expert_group_ids, ready);
  else if (d > 1)
    dense_reduction = collective(reduce, dense_group, g * dense, everyone, std::vector<TaskId>(ready));
  if (de > 1 && !plan_.overlap_grad_reduce)
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
    ready[i] = add_tied_embedding_sync(rank, gpu, ready[i]);         // tied_embedding_sync.cpp
    ready[i] = add_parameter_copy_sync(rank, gpu, ready[i], local);  // dualpipe_copy_sync.cpp
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
