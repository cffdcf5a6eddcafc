#include "workloads/memory_model.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "workloads/activation_memory.hpp"
#include "workloads/attention.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/expert_routing.hpp"
#include "workloads/precision.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {

MemoryBreakdown bytes_per_parameter(const ParallelPlan& plan) {
  return bytes_per_parameter(plan, plan.zero_shard_size());
}

MemoryBreakdown bytes_per_parameter(const ParallelPlan& plan, int replicas) {
  const double d = std::max(replicas, 1);
  const double g = plan.grad_bytes;
  MemoryBreakdown b;
  b[MemoryKind::weights] = plan.zero_stage >= 3 ? 2 / d : 2;
  b[MemoryKind::gradients] = plan.zero_stage >= 2 ? g / d : g;
  b[MemoryKind::optimizer] = plan.zero_stage >= 1 ? 12 / d : 12;
  return b;
}

GpuMemoryModel::GpuMemoryModel(const ModelSpec& model, const ParallelPlan& plan)
    : model_(model),
      plan_(plan),
      layout_{.ranks = plan.pp,
              .micro_batches = 1,
              .chunks = plan.virtual_stages,
              .placement = placement_of(plan.schedule),
              .per_rank = {},
              .evictions = {}} {
  // A capacity factor pads or cuts every expert to it: no GPU keeps more.
  if (!model_.is_moe() || plan_.ep <= 1 || !model_.moe.dropless || model_.moe.routing.balanced())
    return;
  const ExpertLoads loads = expert_loads(model_);
  rank_loads_.assign(static_cast<std::size_t>(plan_.ep), std::vector<double>(loads.share.size(), 1.0));
  for (std::size_t l = 0; l < loads.share.size(); ++l) {
    if (loads.share[l].empty())
      continue;
    const std::vector<double> f = rank_load_factors(loads.share[l], plan_.ep);
    for (std::size_t r = 0; r < f.size(); ++r)
      rank_loads_[r][l] = f[r];
  }
}

double GpuMemoryModel::routed_load(int ep_rank, int layer) const {
  if (rank_loads_.empty() || ep_rank < 0)
    return 1;
  return rank_loads_[static_cast<std::size_t>(ep_rank)][static_cast<std::size_t>(layer)];
}

double GpuMemoryModel::largest_routed_load(int virtual_stage, int ep_rank) const {
  const StageSlice slice = virtual_stage_slice(model_, plan_, virtual_stage);
  double largest = 0;
  bool any = false;
  for (int l = slice.first_layer; l < slice.first_layer + slice.layers; ++l)
    if (model_.is_moe_layer(l)) {
      largest = std::max(largest, routed_load(ep_rank, l));
      any = true;
    }
  if (slice.logits && model_.mtp_layers_are_moe())
    for (int k = 0; k < model_.mtp_depth; ++k) {
      largest = std::max(largest, routed_load(ep_rank, model_.layers + k));
      any = true;
    }
  return any ? largest : 1.0;
}

double GpuMemoryModel::layer_parameters() const {
  return model_.layer_parameters() / plan_.tp;
}

int GpuMemoryModel::pieces(int virtual_stage) const {
  return std::max(virtual_stage_slice(model_, plan_, virtual_stage).layers, 1);
}

double GpuMemoryModel::piece_parameters(int virtual_stage, int layer_in_chunk) const {
  const StageSlice slice = virtual_stage_slice(model_, plan_, virtual_stage);
  // A chunk of no transformer layer (the embedding or the loss alone) is one
  // piece holding what it has.
  double parameters =
      layer_in_chunk < slice.layers
          ? layer_parameters_per_gpu(model_, plan_, slice.first_layer + layer_in_chunk) * plan_.tp
          : 0.0;
  if (slice.embedding && layer_in_chunk == 0)
    parameters += model_.embedding_parameters();
  if (slice.logits && layer_in_chunk == pieces(virtual_stage) - 1) {
    // The rank of the output layer also holds an embedding: the first stage
    // (V shapes), or DualPipe's other direction's (ranks 0 and p - 1).
    const int rank = layout_.rank_of(virtual_stage);
    const bool holds_embedding =
        rank == layout_.rank_of(0) || (layout_.bidirectional() && rank == layout_.rank_of(layout_.ranks));
    parameters += model_.logits_parameters();
    // Megatron keeps a copy of the tied word embeddings for the output
    // layer on the last stage when it is not the first one.
    if (model_.tied_embeddings && !holds_embedding)
      parameters += double(model_.vocab) * model_.hidden;
    if (model_.mtp_depth > 0) {
      // The MTP modules, and the embedding they read the next tokens from:
      // Megatron builds one on the last stage too (GPTModel: pre_process or
      // mtp_process), unless the output head already is one (tied).
      parameters += mtp_parameters_per_gpu(model_, plan_, slice) * plan_.tp;
      if (!model_.tied_embeddings && !holds_embedding)
        parameters += double(model_.vocab) * model_.hidden;
    }
  }
  return parameters / plan_.tp;
}

double GpuMemoryModel::chunk_parameters(int virtual_stage) const {
  double parameters = 0;
  for (int layer = 0; layer < pieces(virtual_stage); ++layer)
    parameters += piece_parameters(virtual_stage, layer);
  return parameters;
}

double GpuMemoryModel::parameters(int rank) const {
  double parameters = 0;
  for (int chunk = 0; chunk < layout_.chunks; ++chunk)
    parameters += chunk_parameters(layout_.virtual_stage(rank, chunk));
  return parameters;
}

double GpuMemoryModel::expert_parameters(int rank) const {
  double parameters = 0;
  for (int chunk = 0; chunk < layout_.chunks; ++chunk) {
    const StageSlice slice = virtual_stage_slice(model_, plan_, layout_.virtual_stage(rank, chunk));
    for (int l = 0; l < slice.layers; ++l)
      parameters += layer_expert_parameters_per_gpu(model_, plan_, slice.first_layer + l);
    if (model_.mtp_depth > 0)
      parameters += mtp_expert_parameters_per_gpu(model_, plan_, slice);
  }
  return parameters;
}

MemoryBreakdown GpuMemoryModel::resident(int rank) const {
  // Expert parameters are replicated (and ZeRO-sharded) over the expert
  // data-parallel group only.
  const double experts = expert_parameters(rank);
  const double dense = parameters(rank) - experts;
  MemoryBreakdown b = bytes_per_parameter(plan_);
  const MemoryBreakdown e = bytes_per_parameter(plan_, plan_.expert_data_parallel_size());
  for (int k = 0; k < kMemoryKindCount; ++k)
    b.bytes[k] = b.bytes[k] * dense + e.bytes[k] * experts;
  // FP8: Transformer Engine's FP8 weight copies (precision.hpp), held all
  // iteration unless FSDP gathers the weights (then they live with the
  // gathered unit, gathered_bytes).
  if (plan_.zero_stage < 3)
    b[MemoryKind::weights] += fp8_weight_copy_bytes_per_parameter(plan_) * layer_parameters_on(rank);
  return b;
}

double GpuMemoryModel::gathered_bytes(double parameters) const {
  return (2.0 + fp8_weight_copy_bytes_per_parameter(plan_)) * parameters;
}

double GpuMemoryModel::layer_parameters_on(int rank) const {
  double parameters = 0;
  for (int chunk = 0; chunk < layout_.chunks; ++chunk) {
    const StageSlice slice = virtual_stage_slice(model_, plan_, layout_.virtual_stage(rank, chunk));
    for (int l = 0; l < slice.layers; ++l)
      parameters += layer_parameters_per_gpu(model_, plan_, slice.first_layer + l);
    if (model_.mtp_depth > 0)
      parameters += mtp_parameters_per_gpu(model_, plan_, slice);
  }
  return parameters;
}

double GpuMemoryModel::layer_activations(int virtual_stage, int ep_rank) const {
  const StageSlice slice = virtual_stage_slice(model_, plan_, virtual_stage);
  if (!imbalanced() || ep_rank < 0)
    return stage_activation_bytes(model_, plan_, slice.layers, slice.first_layer);
  // Each MoE layer at this EP rank's load factor in it.
  double bytes = 0;
  for (int l = slice.first_layer; l < slice.first_layer + slice.layers; ++l)
    bytes += model_.is_moe_layer(l)
                 ? layer_activation_bytes(model_, plan_, plan_.recompute, true, routed_load(ep_rank, l))
                 : layer_activation_bytes(model_, plan_);
  return bytes;
}

double GpuMemoryModel::stored_activations(int virtual_stage, int ep_rank) const {
  const StageSlice slice = virtual_stage_slice(model_, plan_, virtual_stage);
  const bool own_loads = imbalanced() && ep_rank >= 0;
  double bytes = layer_activations(virtual_stage, ep_rank);
  if (slice.embedding)
    bytes += embedding_activation_bytes(model_, plan_);
  if (slice.logits)
    bytes += logits_activation_bytes(model_, plan_);
  if (slice.logits && model_.mtp_depth > 0)
    bytes += mtp_activation_bytes(model_, plan_, own_loads ? mtp_loads(ep_rank) : std::vector<double>{});
  return bytes;
}

std::vector<double> GpuMemoryModel::mtp_loads(int ep_rank) const {
  std::vector<double> loads;
  for (int k = 0; k < model_.mtp_depth; ++k)
    loads.push_back(routed_load(ep_rank, model_.layers + k));
  return loads;
}

double GpuMemoryModel::weight_gradient_hold(int virtual_stage, int ep_rank) const {
  const StageSlice slice = virtual_stage_slice(model_, plan_, virtual_stage);
  const bool own_loads = imbalanced() && ep_rank >= 0;
  double bytes = 0;
  if (!own_loads) {
    const int moe = model_.moe_layers_in(slice.first_layer, slice.layers);
    bytes = (slice.layers - moe) * layer_weight_gradient_hold_bytes(model_, plan_) +
            (moe > 0 ? moe * layer_weight_gradient_hold_bytes(model_, plan_, true) : 0.0);
  } else {
    for (int l = slice.first_layer; l < slice.first_layer + slice.layers; ++l)
      bytes += model_.is_moe_layer(l)
                   ? layer_weight_gradient_hold_bytes(model_, plan_, true, routed_load(ep_rank, l))
                   : layer_weight_gradient_hold_bytes(model_, plan_);
  }
  if (slice.logits)
    bytes += logits_weight_gradient_hold_bytes(model_, plan_);
  if (slice.logits && model_.mtp_depth > 0)
    bytes +=
        mtp_weight_gradient_hold_bytes(model_, plan_, own_loads ? mtp_loads(ep_rank) : std::vector<double>{});
  return bytes;
}

OpMemory GpuMemoryModel::op_memory(PipeOpKind kind, int virtual_stage, int ep_rank) const {
  OpMemory m;
  const double stored = stored_activations(virtual_stage, ep_rank);
  const double workspace =
      imbalanced() && ep_rank >= 0
          ? recompute_workspace_bytes(model_, plan_, largest_routed_load(virtual_stage, ep_rank))
          : recompute_workspace_bytes(model_, plan_);
  auto& start = m.at_start[MemoryKind::activations];
  auto& end = m.at_end[MemoryKind::activations];
  switch (kind) {
    case PipeOpKind::forward:
      // Activations build up layer by layer and are all there when the
      // forward ends: counting them then gives the forward's maximum
      // without charging them before a transfer that frees memory (a BPipe
      // eviction of the previous forward) has had the forward's time to land.
      end = stored;
      break;
    case PipeOpKind::backward:
      start = workspace;
      end = -workspace - stored;
      break;
    case PipeOpKind::backward_input:
      start = workspace;
      end = -workspace - (stored - weight_gradient_hold(virtual_stage, ep_rank));
      break;
    case PipeOpKind::backward_weight:
      end = -weight_gradient_hold(virtual_stage, ep_rank);
      break;
  }
  return m;
}

double GpuMemoryModel::kv_exchange_buffer_bytes() const {
  if (plan_.cp <= 1 || model_.heads <= 0)
    return 0;
  const double kv = traits_of(model_.attention).key_value_elements(model_);
  const double block = 2.0 * plan_.micro_batch_size * model_.seq_len / plan_.cp * kv / plan_.tp;
  return 2 * block;
}

int MemoryEstimate::worst_stage() const {
  int worst = 0;
  for (std::size_t i = 0; i < stages.size(); ++i)
    if (stages[i].peak_bytes > stages[static_cast<std::size_t>(worst)].peak_bytes)
      worst = static_cast<int>(i);
  return worst;
}

namespace {

bool produces_gradients(PipeOpKind kind) {
  return kind == PipeOpKind::backward || kind == PipeOpKind::backward_weight;
}
bool needs_weights(PipeOpKind kind) {
  return kind != PipeOpKind::backward_weight;
}

// Walks one rank's op list.
class RankWalk {
 public:
  RankWalk(const GpuMemoryModel& memory, const PipelineSchedule& schedule, int rank, int ep_rank)
      : memory_(memory), schedule_(schedule), rank_(rank), ep_rank_(ep_rank), plan_(memory.plan()) {
    current_ = memory.resident(rank);
    result_.stage = rank;
    result_.ep_rank = ep_rank;
    result_.peak_bytes = current_.total();
    result_.at_peak = current_;
  }

  StageMemoryEstimate run() {
    const auto& ops = schedule_.per_rank[static_cast<std::size_t>(rank_)];
    const int d = plan_.data_parallel_size();
    // Per chunk: the first and last ops that need its weights and that
    // produce its gradients (gathered once / reduced once per iteration).
    const std::size_t none = ops.size();
    std::vector<std::size_t> first_weights(static_cast<std::size_t>(schedule_.chunks), none),
        last_weights = first_weights, first_gradients = first_weights, last_gradients = first_weights;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const auto c = static_cast<std::size_t>(ops[k].chunk);
      if (needs_weights(ops[k].kind)) {
        if (first_weights[c] == none)
          first_weights[c] = k;
        last_weights[c] = k;
      }
      if (produces_gradients(ops[k].kind)) {
        if (first_gradients[c] == none)
          first_gradients[c] = k;
        last_gradients[c] = k;
      }
    }
    const bool sharded_gradients = d > 1 && (plan_.zero_stage == 2 || plan_.zero_stage == 3);
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const PipeOp& op = ops[k];
      const int vs = schedule_.virtual_stage(rank_, op.chunk);
      const OpMemory& m = op_memory(op.kind, vs);
      MemoryBreakdown during;  // buffers released at the op's end
      if (op.kind == PipeOpKind::forward)
        ++held_;
      if (plan_.cp > 1 && needs_weights(op.kind))
        during[MemoryKind::buffers] += memory_.kv_exchange_buffer_bytes();
      const double largest_piece = largest_piece_parameters(vs);
      const auto c = static_cast<std::size_t>(op.chunk);
      if (plan_.zero_stage >= 3 && d > 1) {
        // The unit running and the one prefetched; the unit's gradients and
        // the previous unit's, still being reduce-scattered. Kept gathered
        // (reshard_after_forward false): the whole chunk, from its first
        // forward to its last backward.
        if (plan_.reshard_after_forward) {
          if (needs_weights(op.kind))
            during[MemoryKind::buffers] += 2 * memory_.gathered_bytes(largest_piece);
        } else if (k == first_weights[c]) {
          current_[MemoryKind::buffers] += memory_.gathered_bytes(memory_.chunk_parameters(vs));
        }
        if (produces_gradients(op.kind) && !plan_.grad_reduce_per_step)
          during[MemoryKind::buffers] += 2 * memory_.unsharded_gradient_bytes(largest_piece);
      }
      if (sharded_gradients && plan_.grad_reduce_per_step && k == first_gradients[c])
        // Accumulated unsharded over the micro-batches, reduce-scattered
        // after the last one (released below once that has landed).
        current_[MemoryKind::buffers] += memory_.unsharded_gradient_bytes(memory_.chunk_parameters(vs));
      if (plan_.zero_stage == 2 && d > 1 && produces_gradients(op.kind) && !plan_.grad_reduce_per_step) {
        const double chunk = memory_.chunk_parameters(vs);
        if (plan_.overlap_grad_reduce) {
          const double bucket = plan_.grad_bucket_size_bytes() / plan_.grad_bytes;
          during[MemoryKind::buffers] += memory_.unsharded_gradient_bytes(std::min(chunk, 2 * bucket));
        } else {
          // Reduce-scattered after the op, while the next op runs.
          const double bytes = memory_.unsharded_gradient_bytes(chunk);
          current_[MemoryKind::buffers] += bytes;
          carried_ += bytes;
        }
      }

      current_ += m.at_start;
      current_ += during;
      observe(op);
      current_ += m.at_end;
      for (double& b : during.bytes)
        b = -b;
      current_ += during;
      if (op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_input)
        --held_;
      // Transfers issued as the op ends hold their memory from then on; what
      // they free (an eviction, the previous op's reduce-scatter) is freed
      // only once they land.
      reload(static_cast<int>(k));
      observe(op);
      if (plan_.zero_stage >= 3 && d > 1 && !plan_.reshard_after_forward && k == last_weights[c])
        current_[MemoryKind::buffers] -= memory_.gathered_bytes(memory_.chunk_parameters(vs));
      if (sharded_gradients && plan_.grad_reduce_per_step && k == last_gradients[c])
        carried_ += memory_.unsharded_gradient_bytes(memory_.chunk_parameters(vs));
      current_[MemoryKind::buffers] -= released_next_;
      released_next_ = carried_;
      carried_ = 0;
      evict(static_cast<int>(k));
    }
    return result_;
  }

  int max_away() const { return max_away_; }

 private:
  // An op's memory depends on its kind and virtual stage only: computed once
  // per walk (under imbalanced routing each EP rank walks every stage).
  const OpMemory& op_memory(PipeOpKind kind, int vs) {
    const auto key = std::make_pair(static_cast<int>(kind), vs);
    auto known = op_memory_.find(key);
    if (known == op_memory_.end())
      known = op_memory_.emplace(key, memory_.op_memory(kind, vs, ep_rank_)).first;
    return known->second;
  }

  double largest_piece_parameters(int vs) const {
    double largest = 0;
    for (int l = 0; l < memory_.pieces(vs); ++l)
      largest = std::max(largest, memory_.piece_parameters(vs, l));
    return largest;
  }

  double evicted_bytes(const ActivationEviction& e) const {
    return memory_.layer_activations(schedule_.virtual_stage(e.rank, e.chunk), ep_rank_);
  }

  void reload(int k) {
    for (const ActivationEviction& e : schedule_.evictions)
      if (e.rank == rank_ && e.reload_after == k && e.evict_after != k) {
        current_[MemoryKind::activations] += evicted_bytes(e);
        ++held_;
        --away_;
      }
  }

  void evict(int k) {
    for (const ActivationEviction& e : schedule_.evictions)
      if (e.rank == rank_ && e.evict_after == k && e.reload_after != k) {
        current_[MemoryKind::activations] -= evicted_bytes(e);
        --held_;
        max_away_ = std::max(max_away_, ++away_);
      }
  }

  void observe(const PipeOp& op) {
    result_.max_forwards_held = std::max(result_.max_forwards_held, held_);
    const double total = current_.total();
    if (total > result_.peak_bytes) {
      result_.peak_bytes = total;
      result_.at_peak = current_;
      result_.peak_op = to_string(std::vector<PipeOp>{op}, schedule_.chunks);
    }
  }

  const GpuMemoryModel& memory_;
  const PipelineSchedule& schedule_;
  int rank_;
  int ep_rank_;
  std::map<std::pair<int, int>, OpMemory> op_memory_;
  const ParallelPlan& plan_;
  MemoryBreakdown current_;
  StageMemoryEstimate result_;
  int held_ = 0;
  int away_ = 0, max_away_ = 0;
  double carried_ = 0, released_next_ = 0;
};

}  // namespace

MemoryEstimate estimate_memory(const ModelSpec& model, const ParallelPlan& plan,
                               const PipelineSchedule& schedule) {
  const GpuMemoryModel memory(model, plan);
  // Under imbalanced routing each EP rank's GPUs walk with their own
  // loads (and a BPipe acceptor holds its own EP rank's evictor's
  // activations); each stage reports the first with the highest peak.
  const int ep_ranks = memory.imbalanced() ? plan.ep : 1;
  std::vector<std::vector<StageMemoryEstimate>> walks(static_cast<std::size_t>(schedule.ranks));
  std::vector<int> away(static_cast<std::size_t>(schedule.ranks), 0);
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    for (int e = 0; e < ep_ranks; ++e) {
      RankWalk walk(memory, schedule, rank, memory.imbalanced() ? e : -1);
      walks[static_cast<std::size_t>(rank)].push_back(walk.run());
      if (e == 0)
        away[static_cast<std::size_t>(rank)] = walk.max_away();
    }
  }
  for (const ActivationEviction& e : schedule.evictions) {
    auto& done = away[static_cast<std::size_t>(e.rank)];
    if (done <= 0)
      continue;  // one charge per evictor
    const int vs = schedule.virtual_stage(e.rank, e.chunk);
    for (int k = 0; k < ep_ranks; ++k) {
      const double bytes = memory.layer_activations(vs, memory.imbalanced() ? k : -1);
      auto& acceptor = walks[static_cast<std::size_t>(e.acceptor)][static_cast<std::size_t>(k)];
      acceptor.peak_bytes += done * bytes;
      acceptor.at_peak[MemoryKind::activations] += done * bytes;
      acceptor.max_forwards_held += done;
    }
    done = 0;
  }
  MemoryEstimate estimate;
  for (auto& stage : walks) {
    std::size_t busiest = 0;
    for (std::size_t k = 1; k < stage.size(); ++k)
      if (stage[k].peak_bytes > stage[busiest].peak_bytes)
        busiest = k;
    estimate.stages.push_back(std::move(stage[busiest]));
  }
  return estimate;
}

}  // namespace trainsim::workloads
