#include "workloads/graph_builder/iteration_builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "workloads/activation_memory.hpp"
#include "workloads/context_parallel.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"
#include "workloads/op_selective_recompute.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/precision.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

// Number of b x s x h all-reduces a TP group runs inside one op of `layers`
// layers: two per layer in the forward (after attention and after the MLP),
// two per layer in the backward, two more per layer when the backward
// recomputes the forward. A zero-bubble split keeps them all in B (input
// gradient: the all-reduces sit on the activation-gradient path); W (weight
// gradient) communicates nothing. With expert tensor parallelism below tp
// (parallel folding, expert_tp 1) a MoE layer's MLP runs outside the TP
// group: the alltoall dispatcher takes each rank's own sequence-parallel
// tokens and no TP collective surrounds the experts (Megatron's
// token_dispatcher.py gathers over the expert-TP group only), so a MoE
// layer without shared experts keeps only its attention's; shared experts
// still run on the dense TP group (SharedExpertMLP) and keep theirs.
int tp_allreduces(const ModelSpec& model, const ParallelPlan& plan, PipeOpKind kind,
                  const StageSlice& slice) {
  int per_pass = 2 * transformer_layers_of(model, slice);
  if (plan.expert_tp_folded() && model.is_moe() && model.moe.shared_experts == 0)
    per_pass -= moe_layers_of(model, slice);
  switch (kind) {
    case PipeOpKind::forward:
      return per_pass;
    case PipeOpKind::backward:
    case PipeOpKind::backward_input:
      return (plan.recompute == Recompute::full ? 2 : 1) * per_pass;
    case PipeOpKind::backward_weight:
      return 0;
  }
  return 0;
}

// The fold of one pass (reduce-scatter, all-gather or all-reduce) of an
// op's TP collectives: tp_allreduces, plus under recompute selective_op the
// all-gathers of the norms' outputs that its recomputation repeats (the
// reduce-scatters' outputs are saved; op_selective_recompute.hpp).
int tp_pass_fold(const ModelSpec& model, const ParallelPlan& plan, PipeOpKind kind, const StageSlice& slice,
                 CollectiveOp pass) {
  int fold = tp_allreduces(model, plan, kind, slice);
  if (pass == CollectiveOp::all_gather &&
      (kind == PipeOpKind::backward || kind == PipeOpKind::backward_input))
    fold += op_selective_recompute_tp_all_gathers(plan) * transformer_layers_of(model, slice);
  return fold;
}

// The collectives of one folded TP all-reduce: itself, or with sequence
// parallelism a reduce-scatter then an all-gather of the same buffer.
std::vector<CollectiveOp> tp_passes(const ParallelPlan& plan) {
  if (plan.sequence_parallel)
    return {CollectiveOp::reduce_scatter, CollectiveOp::all_gather};
  return {CollectiveOp::all_reduce};
}

TaskKind task_kind(PipeOpKind kind) {
  switch (kind) {
    case PipeOpKind::forward:
      return TaskKind::forward;
    case PipeOpKind::backward:
      return TaskKind::backward;
    case PipeOpKind::backward_input:
      return TaskKind::backward_input;
    case PipeOpKind::backward_weight:
      return TaskKind::backward_weight;
  }
  return TaskKind::forward;
}

}  // namespace

namespace detail {

using At = MemoryEvent::At;

IterationBuilder::IterationBuilder(const ModelSpec& model, const ParallelPlan& plan,
                                   const platforms::ClusterSpec& cluster, const CostModel& cost)
    : model_(model), plan_(plan), cluster_(cluster), cost_(cost), memory_(model, plan) {}

OpCost IterationBuilder::op_cost(PipeOpKind kind, const StageSlice& slice,
                                 const platforms::GpuSpec& gpu) const {
  switch (kind) {
    case PipeOpKind::forward:
      return cost_.forward(slice, gpu);
    case PipeOpKind::backward:
      return cost_.backward(slice, gpu);
    case PipeOpKind::backward_input:
      return cost_.backward_input(slice, gpu);
    case PipeOpKind::backward_weight:
      return cost_.backward_weight(slice, gpu);
  }
  return {};
}

TaskGraph IterationBuilder::build(const GraphCounts& reserve) {
  // A task names its chunk and layer in 16 bits (Task::chunk, Task::layer).
  if (model_.layers + model_.mtp_depth > kMaxTaskLayers || plan_.virtual_stages > kMaxTaskLayers)
    throw std::invalid_argument(fmt::format(
        "{} layers ({} MTP modules included) and {} chunks per pipeline rank: trainsim builds at most {} of "
        "each",
        model_.layers + model_.mtp_depth, model_.mtp_depth, plan_.virtual_stages, kMaxTaskLayers));
  graph_.reserve(reserve);
  graph_.gpu_count = plan_.gpu_count();
  // One schedule per replica; replicas with the same micro-batch count share
  // the generator's answer.
  schedules_.clear();
  for (int dp = 0; dp < plan_.dp; ++dp) {
    const int m = plan_.micro_batches_of(dp);
    const auto same = std::find_if(schedules_.begin(), schedules_.end(),
                                   [&](const PipelineSchedule& s) { return s.micro_batches == m; });
    schedules_.push_back(
        same != schedules_.end() ? *same : schedule_for_gpu_costs(model_, plan_, cluster_, cost_, m));
  }
  m_ = plan_.micro_batches();
  // Imbalanced routing changes the work of an EP group's GPUs only when
  // they are several and dropless (a capacity pads every expert to it).
  imbalanced_ = model_.is_moe() && plan_.ep > 1 && model_.moe.dropless && !model_.moe.routing.balanced();
  if (imbalanced_)
    loads_ = expert_loads(model_);
  const auto gpus = static_cast<std::size_t>(plan_.gpu_count());
  const auto slots = static_cast<std::size_t>(plan_.virtual_stages * m_);
  ops_.assign(gpus, {});
  forward_op_.assign(gpus, std::vector<std::size_t>(slots, 0));
  backward_op_ = forward_op_;
  last_.assign(gpus, kNone);
  pending_weight_gradient_.assign(gpus, kNone);
  graph_.resident_memory.resize(gpus);
  // What a GPU holds all iteration depends on its pipeline rank alone:
  // computed once per rank (3,700 instructions a call; 16,384 GPUs).
  std::vector<MemoryBreakdown> resident_of_rank;
  for (int rank = 0; rank < plan_.pp; ++rank)
    resident_of_rank.push_back(memory_.resident(rank));
  for (int gpu = 0; gpu < plan_.gpu_count(); ++gpu)
    graph_.resident_memory[idx(gpu)] = resident_of_rank[static_cast<std::size_t>(plan_.pp_rank_of(gpu))];

  last_gradient_op_.assign(static_cast<std::size_t>(plan_.dp),
                           std::vector<std::vector<std::size_t>>(
                               static_cast<std::size_t>(plan_.pp),
                               std::vector<std::size_t>(static_cast<std::size_t>(plan_.virtual_stages), 0)));
  for (int dp = 0; dp < plan_.dp; ++dp)
    for (int rank = 0; rank < plan_.pp; ++rank) {
      const auto& list = schedule(dp).per_rank[static_cast<std::size_t>(rank)];
      for (std::size_t k = 0; k < list.size(); ++k)
        if (produces_gradients(list[k].kind))
          last_gradient_op_[static_cast<std::size_t>(dp)][static_cast<std::size_t>(rank)]
                           [static_cast<std::size_t>(list[k].chunk)] = k;
    }
  first_forward_op_ = last_gradient_op_;
  for (int dp = 0; dp < plan_.dp; ++dp)
    for (int rank = 0; rank < plan_.pp; ++rank) {
      const auto& list = schedule(dp).per_rank[static_cast<std::size_t>(rank)];
      auto& first = first_forward_op_[static_cast<std::size_t>(dp)][static_cast<std::size_t>(rank)];
      std::vector<bool> seen(first.size(), false);
      for (std::size_t k = 0; k < list.size(); ++k) {
        const auto c = static_cast<std::size_t>(list[k].chunk);
        if (list[k].kind == PipeOpKind::forward && !seen[c]) {
          seen[c] = true;
          first[c] = k;
        }
      }
    }

  // Each replica's ops, or a copy of those of a replica alike built before.
  // (copied_from: the replica copied, or -1; ops_begin: where each
  // replica's ops start, built or copied, and end.)
  std::vector<int> copied_from(static_cast<std::size_t>(plan_.dp), -1);
  std::vector<TaskGraph::Mark> ops_begin(static_cast<std::size_t>(plan_.dp)),
      ops_end(static_cast<std::size_t>(plan_.dp));
  std::map<std::pair<int, std::vector<const platforms::GpuSpec*>>, int> built_alike;
  for (int dp = 0; dp < plan_.dp; ++dp) {
    const auto d = static_cast<std::size_t>(dp);
    ops_begin[d] = graph_.mark();
    if (!model_.is_moe()) {
      const auto [alike, added] = built_alike.emplace(replica_likeness(dp), dp);
      if (!added) {
        copied_from[d] = alike->second;
        const auto source = static_cast<std::size_t>(alike->second);
        copy_replica_ops(alike->second, dp, ops_begin[source], ops_end[source]);
        ops_end[d] = graph_.mark();
        continue;
      }
    }
    for (int rank = 0; rank < plan_.pp; ++rank)
      add_rank_ops(dp, rank);
    ops_end[d] = graph_.mark();
  }
  // A GPU's last op keeps its last piece's weight gradient (deferred_weight_gradients.cpp).
  for (TaskId pending : pending_weight_gradient_)
    if (pending != kNone)
      throw std::logic_error("a deferred weight gradient has no compute after it on its GPU");
  const bool expert_parallel = (plan_.ep > 1 || plan_.expert_tp_folded()) && model_.is_moe();
  if (plan_.ep > 1 && model_.is_moe())
    for (int rank = 0; rank < plan_.pp; ++rank)
      for (const auto& members : moe_dispatch_groups(model_, plan_, rank))
        add_expert_all_to_alls(rank, members);
  // Each replica's sends, or a copy of its source's (they join its ops
  // only, reading of a GPU its place and op list).
  std::vector<TaskGraph::Mark> sends_begin(static_cast<std::size_t>(plan_.dp)),
      sends_end(static_cast<std::size_t>(plan_.dp));
  for (int dp = 0; dp < plan_.dp; ++dp) {
    const auto d = static_cast<std::size_t>(dp);
    if (const int source = copied_from[d]; source >= 0) {
      const auto s = static_cast<std::size_t>(source);
      copy_replica_sends(source, dp, sends_begin[s], sends_end[s],
                         {ops_begin[s].tasks, ops_end[s].tasks, ops_begin[d].tasks});
      continue;
    }
    sends_begin[d] = graph_.mark();
    for (int cp = 0; cp < plan_.cp; ++cp) {
      add_pipeline_sends(dp, cp);
      add_evictions(dp, cp);
    }
    sends_end[d] = graph_.mark();
  }
  for (int rank = 0; rank < plan_.pp; ++rank) {
    if (expert_parallel && plan_.expert_tp_folded()) {
      add_folded_expert_sync_and_step(rank);
      continue;
    }
    for (int tp = 0; tp < plan_.tp; ++tp) {
      if (expert_parallel)
        add_expert_parallel_sync_and_step(rank, tp);
      else if (plan_.zero_stage >= 3 && plan_.data_parallel_size() > 1)
        add_fsdp_sync_and_step(rank, tp);
      else
        add_gradient_sync_and_step(rank, tp);
    }
  }
  // The per-GPU op lists (~120 B per op and GPU) are not needed to seal:
  // freed before the compressed rows are built beside the edges.
  std::vector<std::vector<BuiltOp>>().swap(ops_);
  graph_.seal();
  return std::move(graph_);
}

// Ops run as one compute task unless something must happen between their
// layers: FSDP gathers and reduces every layer, overlapped gradient
// buckets fire as the layers of the backward that completes the gradients
// finish (Megatron: the last micro-batch's; ZeRO-2 reduces after every
// micro-batch), and overlapped parameter gathers gate the layers of each
// chunk's first forward.
bool IterationBuilder::overlaps_previous(int dp, int rank, std::size_t op_index) const {
  if (!plan_.moe_a2a_overlap || plan_.ep <= 1 || !model_.is_moe() || op_index == 0)
    return false;
  const auto& list = schedule(dp).per_rank[static_cast<std::size_t>(rank)];
  if (op_index >= list.size())
    return false;
  const PipeOp& forward = list[op_index - 1];
  const PipeOp& backward = list[op_index];
  if (forward.kind != PipeOpKind::forward ||
      (backward.kind != PipeOpKind::backward && backward.kind != PipeOpKind::backward_input))
    return false;
  // DualPipe and DualPipe-V say which of their F-then-B are pairs.
  if (traits_of(plan_.schedule).marks_pairs && !backward.paired)
    return false;
  const auto moe_layers = [&](const PipeOp& op) {
    return moe_layers_of(model_,
                         virtual_stage_slice(model_, plan_, schedule(dp).virtual_stage(rank, op.chunk)));
  };
  return moe_layers(forward) > 0 && moe_layers(backward) > 0;
}

bool IterationBuilder::split_per_layer(int dp, int rank, std::size_t op_index) const {
  if (overlaps_previous(dp, rank, op_index) || overlaps_previous(dp, rank, op_index + 1))
    return true;  // a merged F&B interleaves its layers
  if (defers_weight_gradients(dp, rank, op_index))
    return true;  // each MoE layer's weight gradient runs under its all-to-all
  if (imbalanced_) {
    // Under imbalanced routing an op exchanges tokens after every MoE
    // layer: the busiest GPU of the EP group sets the pace of each.
    const PipeOp& op = schedule(dp).per_rank[static_cast<std::size_t>(rank)][op_index];
    const StageSlice slice = virtual_stage_slice(model_, plan_, schedule(dp).virtual_stage(rank, op.chunk));
    if (slice.layers > 1 && ep_all_to_alls(plan_, op.kind, moe_layers_of(model_, slice)) > 0)
      return true;
  }
  if (plan_.data_parallel_size() <= 1)
    return false;
  if (plan_.zero_stage >= 3)
    return true;
  const PipeOp& op = schedule(dp).per_rank[static_cast<std::size_t>(rank)][op_index];
  if (plan_.overlap_param_gather && plan_.zero_stage >= 1 && op.kind == PipeOpKind::forward &&
      first_forward_op(dp, rank, op.chunk) == op_index)
    return true;
  if (!plan_.overlap_grad_reduce || !produces_gradients(op.kind))
    return false;
  return plan_.zero_stage == 2 || last_gradient_op(dp, rank, op.chunk) == op_index;
}

// What the ops of replica `dp` are built from besides its rank: its
// micro-batches (its schedule: replicas of equal counts share the
// generator's answer) and the GpuSpec object of each of its GPUs, in
// (rank, cp, tp) order (the costs are asked per spec; the builder reads
// nothing else of a GPU but its place in the plan).
std::pair<int, std::vector<const platforms::GpuSpec*>> IterationBuilder::replica_likeness(int dp) const {
  std::vector<const platforms::GpuSpec*> specs;
  specs.reserve(static_cast<std::size_t>(plan_.pp * plan_.cp * plan_.tp));
  for (int rank = 0; rank < plan_.pp; ++rank)
    for (int cp = 0; cp < plan_.cp; ++cp)
      for (int tp = 0; tp < plan_.tp; ++tp)
        specs.push_back(&cluster_.gpu_of(plan_.gpu_of(rank, dp, tp, cp)));
  return {plan_.micro_batches_of(dp), std::move(specs)};
}

// Each GPU of replica `source` (listed in `sources`) onto its place in
// replica `dp`; -1 for every other GPU.
std::vector<int> IterationBuilder::replica_image(int source, int dp, std::vector<int>& sources) const {
  std::vector<int> image(static_cast<std::size_t>(plan_.gpu_count()), -1);
  for (int rank = 0; rank < plan_.pp; ++rank)
    for (int cp = 0; cp < plan_.cp; ++cp)
      for (int tp = 0; tp < plan_.tp; ++tp) {
        sources.push_back(plan_.gpu_of(rank, source, tp, cp));
        image[idx(sources.back())] = plan_.gpu_of(rank, dp, tp, cp);
      }
  return image;
}

// Replica `dp`'s ops as add_rank_ops would build them, copied from those of
// replica `source` (alike: replica_likeness), which were added between
// `begin` and `end`: add_rank_ops reads of a GPU only its place in the plan
// and its spec, and adds only tasks, dependencies, groups and memory events
// of the replica's own GPUs. Without MoE layers (whose expert-parallel
// ranks, routing loads and expert-TP groups span replicas). Each GPU's op
// list and stream state follow, their task ids shifted with the copy.
void IterationBuilder::copy_replica_ops(int source, int dp, const TaskGraph::Mark& begin,
                                        const TaskGraph::Mark& end) {
  std::vector<int> sources;  // the source replica's GPUs
  const std::vector<int> image = replica_image(source, dp, sources);
  const TaskId shift = graph_.size() - begin.tasks;
  graph_.append_image(begin, end, image);
  const auto moved = [&](TaskId id) {
    if (id == kNone)
      return kNone;
    if (id < begin.tasks || id >= end.tasks)
      throw std::logic_error("a copied replica's GPU state names a task outside its ops");
    return id + shift;
  };
  for (const int gpu : sources) {
    const int to = image[idx(gpu)];
    auto& ops = ops_[idx(to)];
    ops = ops_[idx(gpu)];
    for (BuiltOp& op : ops) {
      for (Piece& piece : op.pieces) {
        piece.first = moved(piece.first);
        piece.last = moved(piece.last);
        piece.exchange = moved(piece.exchange);
        piece.weight_gradient = moved(piece.weight_gradient);
      }
      op.done = moved(op.done);
    }
    forward_op_[idx(to)] = forward_op_[idx(gpu)];
    backward_op_[idx(to)] = backward_op_[idx(gpu)];
    last_[idx(to)] = moved(last_[idx(gpu)]);
    pending_weight_gradient_[idx(to)] = moved(pending_weight_gradient_[idx(gpu)]);
  }
}

// Replica `dp`'s pipeline sends and BPipe transfers as add_pipeline_sends
// and add_evictions would add them, copied from those of replica `source`
// (whose ops `dp`'s are a copy of: `ops`), added between `begin` and
// `end`. They change of the GPUs' state only where each stream's last task
// is (plan.p2p: sync and overlap hold the sender).
void IterationBuilder::copy_replica_sends(int source, int dp, const TaskGraph::Mark& begin,
                                          const TaskGraph::Mark& end, const TaskGraph::Copied& ops) {
  std::vector<int> sources;  // the source replica's GPUs
  const std::vector<int> image = replica_image(source, dp, sources);
  const TaskId shift = graph_.size() - begin.tasks;
  graph_.append_image(begin, end, image, ops);
  for (const int gpu : sources) {
    const TaskId last = last_[idx(gpu)];
    if (last == kNone)
      last_[idx(image[idx(gpu)])] = kNone;
    else if (last >= begin.tasks && last < end.tasks)
      last_[idx(image[idx(gpu)])] = last + shift;
    else if (last >= ops.first && last < ops.last)
      last_[idx(image[idx(gpu)])] = last - ops.first + ops.copy;
    else
      throw std::logic_error("a copied replica's last task lies outside its ops and sends");
  }
}

void IterationBuilder::add_rank_ops(int dp, int rank) {
  // TP groups per CP rank, CP groups per TP rank.
  std::vector<int> tp_groups(static_cast<std::size_t>(plan_.cp), -1),
      cp_groups(static_cast<std::size_t>(plan_.tp), -1);
  if (plan_.tp > 1)
    for (int cp = 0; cp < plan_.cp; ++cp) {
      std::vector<int> members;
      for (int tp = 0; tp < plan_.tp; ++tp)
        members.push_back(plan_.gpu_of(rank, dp, tp, cp));
      tp_groups[static_cast<std::size_t>(cp)] = graph_.add_group(members);
    }
  if (plan_.cp > 1)
    for (int tp = 0; tp < plan_.tp; ++tp) {
      std::vector<int> members;
      for (int cp = 0; cp < plan_.cp; ++cp)
        members.push_back(plan_.gpu_of(rank, dp, tp, cp));
      cp_groups[static_cast<std::size_t>(tp)] = graph_.add_group(members);
    }
  const auto& list = schedule(dp).per_rank[static_cast<std::size_t>(rank)];
  for (std::size_t k = 0; k < list.size(); ++k)
    add_op(dp, rank, k, tp_groups, cp_groups);
}

// One op of a rank's list on every GPU that runs it (the TP x CP GPUs of
// the stage in this replica): its compute pieces, the ring-attention
// exchanges, the TP collectives, then its place in each GPU's op list and
// its memory events.
void IterationBuilder::add_op(int dp, int rank, std::size_t op_index, const std::vector<int>& tp_groups,
                              const std::vector<int>& cp_groups) {
  const PipeOp& op = schedule(dp).per_rank[static_cast<std::size_t>(rank)][op_index];
  const int vs = schedule(dp).virtual_stage(rank, op.chunk);
  const StageSlice slice = virtual_stage_slice(model_, plan_, vs);
  std::vector<PieceSpec> specs = piece_specs(op, slice, vs, split_per_layer(dp, rank, op_index));
  const bool deferring = defers_weight_gradients(dp, rank, op_index);
  const bool last_of_gpu = op_index + 1 == schedule(dp).per_rank[static_cast<std::size_t>(rank)].size();
  for (std::size_t p = 0; p < specs.size(); ++p)
    specs[p].defers_weight_gradient = defers_piece(specs[p], deferring, last_of_gpu && p + 1 == specs.size());
  std::vector<int> gpus;  // the op's GPUs, CP rank major, TP rank minor
  for (int cp = 0; cp < plan_.cp; ++cp)
    for (int tp = 0; tp < plan_.tp; ++tp)
      gpus.push_back(plan_.gpu_of(rank, dp, tp, cp));
  // A backward merged with the forward before it follows the forward's
  // first piece, not its end (plan.moe_a2a_overlap), and ends after it.
  const bool merged = overlaps_previous(dp, rank, op_index);
  if (merged)
    for (int gpu : gpus)
      last_[idx(gpu)] = ops_[idx(gpu)][op_index - 1].pieces.front().last;
  std::vector<BuiltOp> built = add_pieces(op, rank, vs, slice, specs, gpus, tp_groups, cp_groups);
  if (merged)
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const BuiltOp& forward = ops_[idx(gpus[g])][op_index - 1];
      graph_.depend(forward.pieces.back().last, built[g].pieces.back().first);
      if (forward.done != forward.pieces.back().last)
        graph_.depend(forward.done, built[g].pieces.back().first);
    }
  if (!overlaps_tp_comm(op.kind, slice))
    add_tp_collectives(op, rank, slice, tp_groups, built);
  add_expert_tp_collectives(op, rank, slice, gpus, built);  // expert_tensor_parallel_collectives.cpp
  record_op(op, vs, gpus, built);
}

std::vector<IterationBuilder::PieceSpec> IterationBuilder::piece_specs(const PipeOp& op,
                                                                       const StageSlice& slice, int vs,
                                                                       bool per_layer) const {
  // One piece per layer (a backward walks them last to first, the embedding
  // rides with the first layer and the logits with the last), or the whole op.
  std::vector<PieceSpec> specs;
  // A chunk of no transformer layer (the embedding or the loss alone) is one
  // piece too.
  if (!per_layer || slice.layers == 0)
    return {{slice, -1, slice_parameters_per_gpu(model_, plan_, slice)}};
  const int first_layer = plan_.first_layer_of(vs, model_.layers);
  for (int l = 0; l < slice.layers; ++l) {
    const StageSlice piece{.layers = 1,
                           .first_layer = slice.first_layer + l,
                           .embedding = slice.embedding && l == 0,
                           .logits = slice.logits && l == slice.layers - 1};
    specs.push_back({piece, first_layer + l, slice_parameters_per_gpu(model_, plan_, piece)});
  }
  if (op.kind != PipeOpKind::forward)
    std::reverse(specs.begin(), specs.end());
  return specs;
}

std::vector<OpCost> IterationBuilder::piece_costs(PipeOpKind kind, const StageSlice& slice,
                                                  const std::vector<PieceSpec>& specs,
                                                  const platforms::GpuSpec& gpu) const {
  // Piece costs add up to the whole op's (the cost model's per-piece
  // answers only set the proportions); each piece spends the whole op's
  // share of its time in HBM-bound kernels.
  const OpCost whole = op_cost(kind, slice, gpu);
  if (specs.size() == 1)
    return {whole};
  std::vector<OpCost> costs;
  OpCost sum;
  for (const auto& spec : specs) {
    costs.push_back(op_cost(kind, spec.slice, gpu));
    sum.duration_s += costs.back().duration_s;
    sum.model_flops += costs.back().model_flops;
    sum.hardware_flops += costs.back().hardware_flops;
    sum.tp_overlap_s += costs.back().tp_overlap_s;
  }
  for (auto& c : costs) {
    c.duration_s = sum.duration_s > 0 ? whole.duration_s * c.duration_s / sum.duration_s : 0;
    c.model_flops = sum.model_flops > 0 ? whole.model_flops * c.model_flops / sum.model_flops : 0;
    c.hardware_flops =
        sum.hardware_flops > 0 ? whole.hardware_flops * c.hardware_flops / sum.hardware_flops : 0;
    c.memory_bound_fraction = whole.memory_bound_fraction;
    c.tp_overlap_s = sum.tp_overlap_s > 0 ? whole.tp_overlap_s * c.tp_overlap_s / sum.tp_overlap_s : 0;
  }
  return costs;
}

std::vector<BuiltOp> IterationBuilder::add_pieces(const PipeOp& op, int rank, int vs, const StageSlice& slice,
                                                  const std::vector<PieceSpec>& specs,
                                                  const std::vector<int>& gpus,
                                                  const std::vector<int>& tp_groups,
                                                  const std::vector<int>& cp_groups) {
  const int passes = plan_.cp > 1 ? cp_exchange_passes(plan_, op.kind) : 0;
  const bool overlap = overlaps_tp_comm(op.kind, slice);
  const bool async_tp = runs_async_tp(op.kind, slice);
  // The GPUs of a node group share one GpuSpec: a run of GPUs on the same
  // spec (a TP group's) shares its costs, computed once, and, without
  // imbalanced routing, one list of them (cost_of: each GPU's list).
  std::vector<std::vector<OpCost>> costs;
  std::vector<std::size_t> cost_of(gpus.size());
  const platforms::GpuSpec* costed = nullptr;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const platforms::GpuSpec& spec = cluster_.gpu_of(gpus[g]);
    if (&spec != costed)
      costs.push_back(piece_costs(op.kind, slice, specs, spec));
    else if (imbalanced_)
      costs.push_back(costs.back());
    cost_of[g] = costs.size() - 1;
    costed = &spec;
  }
  // Imbalanced routing: each GPU's pieces take what its experts' load adds
  // (each GPU has a list of its own then).
  std::vector<std::vector<double>> imbalance;
  if (imbalanced_) {
    imbalance.assign(gpus.size(), std::vector<double>(specs.size(), 0.0));
    for (std::size_t g = 0; g < gpus.size(); ++g)
      for (std::size_t p = 0; p < specs.size(); ++p) {
        imbalance[g][p] = expert_load_extra_s(op.kind, specs[p].slice, gpus[g]);
        costs[cost_of[g]][p].duration_s += imbalance[g][p];
      }
  }
  std::vector<BuiltOp> built(gpus.size());
  for (std::size_t g = 0; g < gpus.size(); ++g)
    built[g] = {.op = op, .virtual_stage = vs, .pieces = {}, .done = kNone};
  for (std::size_t p = 0; p < specs.size(); ++p) {
    const auto& spec = specs[p];
    const double share = passes > 0 ? attention_share(model_, plan_, spec.slice) : 0.0;
    std::vector<std::vector<TaskId>> gemm_chunks(overlap ? gpus.size() : 0);
    std::vector<AsyncTpPiece> async_pieces(async_tp ? gpus.size() : 0);
    // What the cost model gives per GpuSpec, like the costs above: asked
    // once per run of GPUs on one spec.
    const platforms::GpuSpec* asked = nullptr;
    WeightShare weight_share;
    std::vector<AsyncTpUnit> async_units;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const int gpu = gpus[g];
      const OpCost& c = costs[cost_of[g]][p];
      if (const platforms::GpuSpec& gpu_spec = cluster_.gpu_of(gpu); &gpu_spec != asked) {
        asked = &gpu_spec;
        if (spec.defers_weight_gradient)
          weight_share = weight_gradient_share(spec.slice, gpu_spec);
        if (async_tp)
          async_units = cost_.async_tp_units(op.kind, gpu_spec);
      }
      Task task{.kind = task_kind(op.kind),
                .chunk = task_index(op.chunk),
                .layer = task_index(spec.layer),
                .gpu = gpu,
                .stage = rank,
                .micro_batch = op.micro_batch,
                .duration_s = c.duration_s,
                .memory_bound_fraction = c.memory_bound_fraction,
                .model_flops = c.model_flops,
                .hardware_flops = c.hardware_flops};
      task.imbalance_s = imbalanced_ ? imbalance[g][p] : 0.0;
      Piece piece{.layer = spec.layer, .parameters = spec.parameters};
      Task attention;
      if (share > 0) {
        // Ring attention: the attention core, which overlaps the exchange,
        // and the rest of the piece.
        attention = task;
        attention.imbalance_s = 0;  // the experts' extra is in the rest
        attention.duration_s *= share;
        attention.model_flops *= share;
        attention.hardware_flops *= share;
        attention.attention = true;
        task.duration_s -= attention.duration_s;
        task.model_flops -= attention.model_flops;
        task.hardware_flops -= attention.hardware_flops;
      }
      const std::vector<Task> gemms =
          overlap ? split_linear_gemms(task, c.tp_overlap_s) : std::vector<Task>{};
      if (async_tp)
        async_pieces[g] = take_async_tp_gemms(task, async_units, spec.slice);
      // plan.delay_wgrad_compute refuses tp_comm_overlap: no GEMM segments here.
      const std::optional<Task> weight =
          spec.defers_weight_gradient ? std::optional<Task>(split_off_weight_gradient(task, c, weight_share))
                                      : std::nullopt;
      if (share > 0) {
        piece.first = graph_.add(attention);
        piece.last = graph_.add(task);
        graph_.depend(piece.first, piece.last);
      } else {
        piece.first = piece.last = graph_.add(task);
      }
      // The compute stream runs a deferred weight gradient before its next piece.
      if (pending_weight_gradient_[idx(gpu)] != kNone) {
        graph_.depend(pending_weight_gradient_[idx(gpu)], piece.first);
        pending_weight_gradient_[idx(gpu)] = kNone;
      }
      if (weight) {
        piece.weight_gradient = graph_.add(*weight);
        graph_.depend(piece.last, piece.weight_gradient);
        pending_weight_gradient_[idx(gpu)] = piece.weight_gradient;
      }
      // The GEMM segments follow the rest of the piece; piece.last moves to
      // the last one once the exchange (which gates the rest) is in place.
      TaskId previous = piece.last;
      for (const Task& gemm : gemms) {
        const TaskId id = graph_.add(gemm);
        graph_.depend(previous, id);
        gemm_chunks[g].push_back(id);
        previous = id;
      }
      if (last_[idx(gpu)] != kNone)
        graph_.depend(last_[idx(gpu)], piece.first);
      built[g].pieces.push_back(piece);
    }
    if (share > 0)
      add_ring_attention_exchange(op, rank, spec, passes, gpus, cp_groups, built);
    if (async_tp)
      add_async_tp_units(op, rank, spec, gpus, tp_groups, async_pieces, built);
    if (overlap)
      add_overlapped_tp_collectives(op, rank, spec, tp_groups, gemm_chunks, built);
    for (std::size_t g = 0; g < gpus.size(); ++g)
      last_[idx(gpus[g])] = overlap ? built[g].done : built[g].pieces.back().last;
  }
  if (!overlap)
    for (std::size_t g = 0; g < gpus.size(); ++g)
      built[g].done = built[g].pieces.back().last;
  return built;
}

void IterationBuilder::add_ring_attention_exchange(const PipeOp& op, int rank, const PieceSpec& spec,
                                                   int passes, const std::vector<int>& gpus,
                                                   const std::vector<int>& cp_groups,
                                                   std::vector<BuiltOp>& built) {
  // The CP group passes this piece's keys and values around while each GPU
  // computes attention on the block it holds.
  for (int tp = 0; tp < plan_.tp; ++tp) {
    const TaskId id = graph_.add(collective_task(CommKind::cp, CollectiveOp::all_gather,
                                                 cp_groups[static_cast<std::size_t>(tp)], rank,
                                                 cp_exchange_bytes(model_, plan_),
                                                 {.chunk = op.chunk,
                                                  .micro_batch = op.micro_batch,
                                                  .layer = spec.layer,
                                                  .fold = passes * spec.slice.layers,
                                                  .algorithm = platforms::CollectiveAlgorithm::p2p_ring}));
    for (int cp = 0; cp < plan_.cp; ++cp) {
      const auto g = static_cast<std::size_t>(cp * plan_.tp + tp);
      const int gpu = gpus[g];
      if (last_[idx(gpu)] != kNone)
        graph_.depend(last_[idx(gpu)], id);
      graph_.depend(id, built[g].pieces.back().last);
      built[g].pieces.back().exchange = id;
      graph_.add_memory(id, gpu, At::start, MemoryKind::buffers, memory_.kv_exchange_buffer_bytes());
      graph_.add_memory(id, gpu, At::end, MemoryKind::buffers, -memory_.kv_exchange_buffer_bytes());
    }
  }
}

void IterationBuilder::add_tp_collectives(const PipeOp& op, int rank, const StageSlice& slice,
                                          const std::vector<int>& tp_groups, std::vector<BuiltOp>& built) {
  // The op's all-reduces, folded into one collective per TP group (two with
  // sequence parallelism: reduce-scatter then all-gather, same volume).
  // Under torch_async only what async TP leaves to NCCL (async_tp_units.cpp).
  const bool async_tp = runs_async_tp(op.kind, slice);
  const auto pass_fold = [&](CollectiveOp pass) {
    return async_tp ? async_tp_plain_fold(op.kind, slice, pass)
                    : tp_pass_fold(model_, plan_, op.kind, slice, pass);
  };
  std::vector<CollectiveOp> passes;
  for (CollectiveOp pass : tp_passes(plan_))
    if (pass_fold(pass) > 0)
      passes.push_back(pass);
  const int fold = tp_allreduces(model_, plan_, op.kind, slice);
  if (plan_.tp <= 1 || fold <= 0 || passes.empty())
    return;
  for (int cp = 0; cp < plan_.cp; ++cp) {
    TaskId previous = kNone;
    for (CollectiveOp collective_op : passes) {
      const TaskId id = graph_.add(collective_task(
          CommKind::tp, collective_op, tp_groups[static_cast<std::size_t>(cp)], rank,
          tp_pass_bytes(collective_op, op.kind),
          {.chunk = op.chunk, .micro_batch = op.micro_batch, .fold = pass_fold(collective_op)}));
      if (previous != kNone)
        graph_.depend(previous, id);
      else
        for (int tp = 0; tp < plan_.tp; ++tp)
          graph_.depend(built[static_cast<std::size_t>(cp * plan_.tp + tp)].pieces.back().last, id);
      previous = id;
    }
    for (int tp = 0; tp < plan_.tp; ++tp)
      built[static_cast<std::size_t>(cp * plan_.tp + tp)].done = previous;
  }
}

double IterationBuilder::tp_pass_bytes(CollectiveOp pass, PipeOpKind kind) const {
  if (model_.is_mla() && plan_.sequence_parallel)
    return mla_sequence_parallel_pass_bytes(model_, plan_, pass, kind) *
           tp_collective_byte_factor(plan_, pass == CollectiveOp::all_gather);
  return tp_allreduce_bytes(model_, plan_) *
         tp_collective_byte_factor(plan_, pass == CollectiveOp::all_gather);
}

bool IterationBuilder::overlaps_tp_comm(PipeOpKind kind, const StageSlice& slice) const {
  return plan_.userbuffers() && plan_.tp > 1 && slice.layers > 0 &&
         tp_allreduces(model_, plan_, kind, slice) > 0;
}

// Transformer Engine's userbuffers (plan.tp_comm_overlap) split each GEMM
// next to a TP collective into k = tp chunks and move chunk j's data while
// chunk j + 1 computes (ring exchange for the all-gathers, pipelined
// reduce-scatters). trainsim keeps that pipeline per piece: `rest` (the
// attention core, norms and element-wise kernels) runs first, then the
// piece's linear GEMMs (G), with the piece's collectives (C) moving behind
// them. A k-chunk pipeline of uniform chunks ends max(G + C / k, G / k + C)
// after the rest, which three GEMM segments (G / k, (k - 2) G / k, G / k)
// and two collective segments ((k - 1) C / k after the first segment, C / k
// after the last) reproduce exactly with far fewer tasks than k of each
// (the collective segments pay their latency once, not per chunk). Returns
// the segments (the middle one only when k > 2); `rest` keeps the
// remainder. FLOPs split with the time; the GEMMs are compute-bound, so the
// rest keeps the piece's HBM-bound time.
std::vector<Task> IterationBuilder::split_linear_gemms(Task& rest, double linear_s) const {
  const double whole = rest.duration_s;
  const double gemm = std::clamp(linear_s, 0.0, whole);
  const double share = whole > 0 ? gemm / whole : 0.0;
  const double k = plan_.tp;
  auto segment = [&](double chunks) {
    Task t = rest;
    t.imbalance_s = 0;  // the linear GEMMs' time: the experts' extra stays in the rest
    t.duration_s = gemm * chunks / k;
    t.model_flops = rest.model_flops * share * chunks / k;
    t.hardware_flops = rest.hardware_flops * share * chunks / k;
    t.memory_bound_fraction = 0;
    t.attention = false;
    return t;
  };
  std::vector<Task> segments = {segment(1)};
  if (plan_.tp > 2)
    segments.push_back(segment(k - 2));
  segments.push_back(segment(1));
  rest.duration_s = whole - gemm;
  for (const Task& t : segments) {
    rest.model_flops -= t.model_flops;
    rest.hardware_flops -= t.hardware_flops;
  }
  rest.memory_bound_fraction =
      rest.duration_s > 0 ? std::min(1.0, rest.memory_bound_fraction * whole / rest.duration_s) : 0.0;
  return segments;
}

// The piece's TP collectives (tp_allreduces of its layers, reduce-scatter +
// all-gather under sequence parallelism) in two segments with the same
// fold: (tp - 1) / tp of the bytes once every GPU of the group has computed
// its first GEMM chunk, the last 1 / tp once every GPU has computed its
// last one and the first segment has moved. The op's output is ready when
// the last segment has.
void IterationBuilder::add_overlapped_tp_collectives(const PipeOp& op, int rank, const PieceSpec& spec,
                                                     const std::vector<int>& tp_groups,
                                                     const std::vector<std::vector<TaskId>>& gemm_chunks,
                                                     std::vector<BuiltOp>& built) {
  const double k = plan_.tp;
  const std::vector<CollectiveOp> passes_of_op = tp_passes(plan_);
  for (int cp = 0; cp < plan_.cp; ++cp) {
    const auto group = [&](int tp) { return static_cast<std::size_t>(cp * plan_.tp + tp); };
    TaskId previous = kNone;
    for (const bool last : {false, true}) {
      for (std::size_t pass = 0; pass < passes_of_op.size(); ++pass) {
        const double bytes = tp_pass_bytes(passes_of_op[pass], op.kind);
        const TaskId id = graph_.add(
            collective_task(CommKind::tp, passes_of_op[pass], tp_groups[static_cast<std::size_t>(cp)], rank,
                            last ? bytes / k : bytes * (k - 1) / k,
                            {.chunk = op.chunk,
                             .micro_batch = op.micro_batch,
                             .layer = spec.layer,
                             .fold = tp_pass_fold(model_, plan_, op.kind, spec.slice, passes_of_op[pass])}));
        if (previous != kNone)
          graph_.depend(previous, id);
        if (pass == 0)
          for (int tp = 0; tp < plan_.tp; ++tp)
            graph_.depend(last ? gemm_chunks[group(tp)].back() : gemm_chunks[group(tp)].front(), id);
        previous = id;
      }
    }
    for (int tp = 0; tp < plan_.tp; ++tp) {
      built[group(tp)].pieces.back().last = gemm_chunks[group(tp)].back();
      built[group(tp)].done = previous;
    }
  }
}

void IterationBuilder::record_op(const PipeOp& op, int vs, const std::vector<int>& gpus,
                                 std::vector<BuiltOp>& built) {
  const std::size_t s = slot(op.chunk, op.micro_batch);
  const OpMemory balanced_memory = memory_.op_memory(op.kind, vs);
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const int gpu = gpus[g];
    // Imbalanced routing: each GPU keeps its own EP rank's share of the
    // routed copies (GpuMemoryModel).
    const OpMemory memory = memory_.imbalanced()
                                ? memory_.op_memory(op.kind, vs, expert_parallel_rank_of(plan_, gpu))
                                : balanced_memory;
    auto& list = ops_[idx(gpu)];
    switch (op.kind) {
      case PipeOpKind::forward:
        forward_op_[idx(gpu)][s] = list.size();
        break;
      case PipeOpKind::backward:
      case PipeOpKind::backward_input:
        backward_op_[idx(gpu)][s] = list.size();
        if (op.paired && (list.empty() || list.back().op.kind != PipeOpKind::forward))
          throw std::logic_error("schedule pairs a backward with no forward before it");
        break;
      case PipeOpKind::backward_weight: {
        // W(mb) needs its own B(mb): every generator lists B first.
        const std::size_t b = backward_op_[idx(gpu)][s];
        if (b >= list.size() || list[b].op.micro_batch != op.micro_batch || list[b].op.chunk != op.chunk ||
            list[b].op.kind != PipeOpKind::backward_input)
          throw std::logic_error("schedule lists a weight gradient before its input gradient");
        graph_.depend(list[b].pieces.back().last, built[g].pieces.front().first);
        break;
      }
    }
    for (int k = 0; k < kMemoryKindCount; ++k) {
      const auto kind = static_cast<MemoryKind>(k);
      graph_.add_memory(built[g].pieces.front().first, gpu, At::start, kind, memory.at_start[kind]);
      graph_.add_memory(built[g].pieces.back().gradients_done(), gpu, At::end, kind, memory.at_end[kind]);
    }
    last_[idx(gpu)] = built[g].done;
    list.push_back(std::move(built[g]));
  }
}

void IterationBuilder::gate_next(TaskId id, int gpu, std::size_t k) {
  const auto& ops = ops_[idx(gpu)];
  if (k + 1 >= ops.size())
    return;
  // The loader refuses per-replica schedules with ep > 1: replica 0's list.
  if (overlaps_previous(0, plan_.pp_rank_of(gpu), k + 1))
    graph_.depend(id, ops[k + 1].pieces.back().first);
  else
    gate(id, gpu, k + 1);
}

void IterationBuilder::gate(TaskId input, int gpu, std::size_t op_index) {
  const Piece& first = ops_[idx(gpu)][op_index].pieces.front();
  graph_.depend(input, first.first);
  if (first.exchange != kNone)
    graph_.depend(input, first.exchange);
}

// Activations flow up the virtual stages, gradients back down; each TP
// rank sends its share to the same TP rank of the GPU holding the next
// virtual stage. Consecutive virtual stages on one rank (the turn of a V)
// hand over in memory: a dependency, no transfer. Under plan.p2p: sync
// (Megatron's blocking batched send / receive) each transfer also waits for
// its receiver to post the receive, which it does once the op before the
// consumer is done, and the sender's next op waits for the transfer. Under
// plan.p2p: overlap (Megatron's interleaved overlap_p2p_comm) the receive is
// posted after the receiver's previous op of the consumer's kind and the
// sender's next op of the producer's kind waits (overlapped_p2p.cpp).
void IterationBuilder::add_pipeline_sends(int dp, int cp) {
  const double bytes = pipeline_message_bytes(model_, plan_);
  const P2pMode p2p = resolved_p2p(plan_);
  const bool sync = p2p == P2pMode::sync, overlap = p2p == P2pMode::overlap;
  const PipelineSchedule& sched = schedule(dp);
  const int m = sched.micro_batches_of_chunk();
  const int stages = sched.virtual_stages();
  std::vector<TaskId> after;  // what a send waits for, reused from send to send
  for (int tp = 0; tp < plan_.tp; ++tp) {
    for (int vs = 0; vs + 1 < stages; ++vs) {
      if (sched.is_last_stage(vs))
        continue;  // DualPipe: the down direction ends, the up one starts afresh
      const int r0 = sched.rank_of(vs), r1 = sched.rank_of(vs + 1);
      const int c0 = sched.chunk_of(vs), c1 = sched.chunk_of(vs + 1);
      const int g0 = plan_.gpu_of(r0, dp, tp, cp), g1 = plan_.gpu_of(r1, dp, tp, cp);
      for (int mb = 0; mb < m; ++mb) {
        const std::size_t f0 = forward_op_[idx(g0)][slot(c0, mb)], f1 = forward_op_[idx(g1)][slot(c1, mb)];
        const std::size_t b0 = backward_op_[idx(g0)][slot(c0, mb)], b1 = backward_op_[idx(g1)][slot(c1, mb)];
        const TaskId f_out = ops_[idx(g0)][f0].done;
        const TaskId b_out = ops_[idx(g1)][b1].done;
        if (r0 == r1) {
          gate(f_out, g1, f1);
          gate(b_out, g0, b0);
          continue;
        }
        // Activations downstream after the forward, gradients upstream after
        // the backward; each gates the op that consumes it.
        struct Hop {
          int from, to, stage, chunk;
          TransferKind transfer;
          std::size_t producer, consumer;
        };
        for (const Hop& h : {Hop{g0, g1, r0, c0, TransferKind::activation, f0, f1},
                             Hop{g1, g0, r1, c1, TransferKind::gradient, b1, b0}}) {
          after.assign(1, ops_[idx(h.from)][h.producer].done);
          // A merged F&B (plan.moe_a2a_overlap) posts both its receives
          // before its forward, as Megatron's combined step does.
          std::size_t posted = h.consumer;
          if (overlaps_previous(dp, plan_.pp_rank_of(h.to), h.consumer))
            --posted;
          if (sync && posted > 0)
            after.push_back(ops_[idx(h.to)][posted - 1].done);
          if (overlap)
            if (const auto post = overlap_receive_posted(h.to, h.consumer))
              after.push_back(ops_[idx(h.to)][*post].done);
          const TaskId send = add_send({.from = h.from,
                                        .to = h.to,
                                        .stage = h.stage,
                                        .chunk = h.chunk,
                                        .mb = mb,
                                        .bytes = bytes,
                                        .transfer = h.transfer},
                                       after);
          gate(send, h.to, h.consumer);
          if (sync)
            hold_sender(send, h.from, h.producer);
          if (overlap)
            overlap_hold_sender(send, h.from, h.producer);
        }
      }
    }
    // The last virtual stage turns the forward around: its backward starts
    // from its own forward's loss, and so does the forward it is paired with
    // when they run overlapped (DualPipe's F&B). DualPipe has one per
    // direction.
    for (int last = 0; last < stages; ++last) {
      if (!sched.is_last_stage(last))
        continue;
      const int g = plan_.gpu_of(sched.rank_of(last), dp, tp, cp);
      for (int mb = 0; mb < m; ++mb) {
        const std::size_t s = slot(sched.chunk_of(last), mb);
        const TaskId loss = ops_[idx(g)][forward_op_[idx(g)][s]].done;
        const std::size_t b = backward_op_[idx(g)][s];
        gate(loss, g, b);
        if (ops_[idx(g)][b].op.paired)
          gate(loss, g, b - 1);
      }
    }
  }
}

// BPipe: the evictor sends a forward's stored activations to its acceptor
// once the forward is done, and the acceptor sends them back when the
// evictor's reload point has passed; the backward waits for the reload.
// Both are pipeline transfers: they share the pipeline streams and links
// with the activations and gradients. The activations live on the acceptor
// from the start of the eviction to the end of the reload.
void IterationBuilder::add_evictions(int dp, int cp) {
  const PipelineSchedule& sched = schedule(dp);
  for (const ActivationEviction& e : sched.evictions) {
    const int vs = sched.virtual_stage(e.rank, e.chunk);
    for (int tp = 0; tp < plan_.tp; ++tp) {
      const int evictor = plan_.gpu_of(e.rank, dp, tp, cp), acceptor = plan_.gpu_of(e.acceptor, dp, tp, cp);
      // The evictor's layers' activations, at its EP rank's loads under
      // imbalanced routing (what its forward stored).
      const double bytes =
          memory_.layer_activations(vs, memory_.imbalanced() ? expert_parallel_rank_of(plan_, evictor) : -1);
      const auto& ops = ops_[idx(evictor)];
      const TaskId evicted = add_send({.from = evictor,
                                       .to = acceptor,
                                       .stage = e.rank,
                                       .chunk = e.chunk,
                                       .mb = e.micro_batch,
                                       .bytes = bytes,
                                       .transfer = TransferKind::evict},
                                      {ops[static_cast<std::size_t>(e.evict_after)].done});
      graph_.add_memory(evicted, acceptor, At::start, MemoryKind::activations, bytes);
      graph_.add_memory(evicted, evictor, At::end, MemoryKind::activations, -bytes);
      std::vector<TaskId> after{evicted};
      if (e.reload_after >= 0)
        after.push_back(ops[static_cast<std::size_t>(e.reload_after)].pieces.back().last);
      const TaskId reload = add_send({.from = acceptor,
                                      .to = evictor,
                                      .stage = e.acceptor,
                                      .chunk = e.chunk,
                                      .mb = e.micro_batch,
                                      .bytes = bytes,
                                      .transfer = TransferKind::reload},
                                     after);
      graph_.depend(reload, ops[static_cast<std::size_t>(e.reload_before)].pieces.front().first);
      graph_.add_memory(reload, evictor, At::start, MemoryKind::activations, bytes);
      graph_.add_memory(reload, acceptor, At::end, MemoryKind::activations, -bytes);
    }
  }
}

// plan.p2p: sync: the sender's compute stream waits for its send before
// the op after the producer (or, after its last op, before whatever the GPU
// does next: the gradient synchronisation, the optimizer step).
void IterationBuilder::hold_sender(TaskId send, int gpu, std::size_t producer) {
  if (producer + 1 < ops_[idx(gpu)].size())
    gate_next(send, gpu, producer);  // a merged backward: its last piece
  else
    last_[idx(gpu)] = send;
}

TaskId IterationBuilder::add_send(const Transfer& t, const std::vector<TaskId>& after) {
  Task send{.kind = TaskKind::send,
            .comm = CommKind::pp,
            .transfer = t.transfer,
            .chunk = task_index(t.chunk),
            .gpu = t.from,
            .peer = t.to,
            .stage = t.stage,
            .micro_batch = t.mb,
            .bytes = t.bytes};
  const TaskId id = graph_.add(send);
  for (TaskId a : after)
    graph_.depend(a, id);
  return id;
}

std::vector<int> IterationBuilder::data_parallel_members(int rank, int tp) const {
  std::vector<int> members;
  for (int dp = 0; dp < plan_.dp; ++dp)
    for (int cp = 0; cp < plan_.cp; ++cp)
      members.push_back(plan_.gpu_of(rank, dp, tp, cp));
  return members;
}

std::vector<TaskId> IterationBuilder::add_optimizer_steps(int rank, const std::vector<int>& members,
                                                          double parameters, TaskId after) {
  std::vector<TaskId> steps;
  for (int gpu : members) {
    const OpCost cost = cost_.optimizer(parameters, cluster_.gpu_of(gpu));
    Task step{.kind = TaskKind::optimizer,
              .gpu = gpu,
              .stage = rank,
              .duration_s = cost.duration_s,
              .memory_bound_fraction = cost.memory_bound_fraction};
    const TaskId id = graph_.add(step);
    // A tied embedding's copies are summed first (tied_embedding_sync.cpp).
    const TaskId ready = add_parameter_copy_sync(
        rank, gpu, add_tied_embedding_sync(rank, gpu, after != kNone ? after : last_[idx(gpu)]), parameters);
    graph_.depend(ready, id);
    if (after != kNone && last_[idx(gpu)] != kNone)
      graph_.depend(last_[idx(gpu)], id);
    last_[idx(gpu)] = id;
    steps.push_back(id);
  }
  return steps;
}

}  // namespace detail

TaskGraph build_iteration(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, const CostModel& cost,
                          const GraphCounts& reserve) {
  if (plan.gpu_count() != cluster.gpu_count())
    throw std::invalid_argument("plan and cluster GPU counts differ");
  if (plan.cp < 1 || plan.zero_stage < 0 || plan.zero_stage > 3)
    throw std::invalid_argument("context parallelism below 1 or ZeRO stage outside 0..3");
  // The same rules the scenario loader reports to users (workloads/plan_checks.hpp).
  if (const auto problems = plan_problems(model, plan); !problems.empty()) {
    std::string text = "the plan cannot be built:";
    for (const auto& p : problems)
      text += " " + p.key + ": " + p.message + ";";
    throw std::invalid_argument(text);
  }
  if (plan.cp > 1) {
    const ContextParallelCost per_gpu(cost, plan.cp);
    return detail::IterationBuilder(model, plan, cluster, per_gpu).build(reserve);
  }
  return detail::IterationBuilder(model, plan, cluster, cost).build(reserve);
}

}  // namespace trainsim::workloads
