#include "workloads/stage_slices.hpp"

#include "workloads/context_parallel.hpp"
#include "workloads/expert_parallel.hpp"

namespace trainsim::workloads {
namespace {

// One-way time of a pipeline message between two GPUs, from the cluster's
// link specs (what ZB-V's greedy calls the communication cost).
double transfer_time_s(const platforms::ClusterSpec& cluster, int from, int to, double bytes) {
  const auto a = cluster.locate(from), b = cluster.locate(to);
  const auto& link = a.domain == b.domain ? cluster.group_of(from).nvlink : cluster.group_of(from).nic;
  return link.bandwidth_Bps > 0 ? link.latency_s + bytes / link.bandwidth_Bps : link.latency_s;
}

}  // namespace

PipelineSchedule layout_of(const ParallelPlan& plan) {
  return PipelineSchedule{.ranks = plan.pp,
                          .micro_batches = 1,
                          .chunks = plan.virtual_stages,
                          .placement = placement_of(plan.schedule),
                          .per_rank = {},
                          .evictions = {}};
}

double pipeline_message_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return 2.0 * plan.micro_batch_size * model.seq_len / plan.cp * model.hidden / plan.tp;
}

double tp_allreduce_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return 2.0 * plan.micro_batch_size * model.seq_len / plan.cp * model.hidden;
}

double mla_sequence_parallel_pass_bytes(const ModelSpec& model, const ParallelPlan& plan, CollectiveOp pass,
                                        PipeOpKind kind) {
  const auto& a = model.mla;
  const double h = model.hidden;
  const double w = (a.q_lora_rank > 0 ? double(a.q_lora_rank) : h) + a.kv_lora_rank + a.qk_rope_head_dim;
  const double per_token_h =
      2.0 * plan.micro_batch_size * model.seq_len / plan.cp;  // bf16 bytes per unit width
  // Widths of the passes of one layer: forward all-gathers {w, h},
  // reduce-scatters {h, h}; backward all-gathers {h, h}, reduce-scatters
  // {w, h}.
  const bool gather = pass == CollectiveOp::all_gather;
  const double forward = gather ? (w + h) / 2 : h;
  const double backward = gather ? h : (w + h) / 2;
  switch (kind) {
    case PipeOpKind::forward:
      return per_token_h * forward;
    case PipeOpKind::backward:
    case PipeOpKind::backward_input:
      return per_token_h * (plan.recompute == Recompute::full ? (forward + backward) / 2 : backward);
    case PipeOpKind::backward_weight:
      return 0;
  }
  return 0;
}

StageSlice virtual_stage_slice(const ModelSpec& model, const ParallelPlan& plan, int virtual_stage) {
  // DualPipe: each direction's stage k is model stage k (model_stage_of).
  const int stage = plan.model_stage_of(virtual_stage);
  return {.layers = plan.layers_of(virtual_stage, model.layers),
          .first_layer = plan.first_layer_of(virtual_stage, model.layers),
          .embedding = stage == 0,
          .logits = stage == plan.model_stages() - 1};
}

int transformer_layers_of(const ModelSpec& model, const StageSlice& slice) {
  return slice.layers + (slice.logits ? model.mtp_depth : 0);
}

int moe_layers_of(const ModelSpec& model, const StageSlice& slice) {
  const int mtp = slice.logits && model.mtp_depth > 0 && model.mtp_layers_are_moe() ? model.mtp_depth : 0;
  return model.moe_layers_in(slice.first_layer, slice.layers) + mtp;
}

std::vector<int> moe_layer_indices(const ModelSpec& model, const StageSlice& slice) {
  std::vector<int> layers;
  for (int l = slice.first_layer; l < slice.first_layer + slice.layers; ++l)
    if (model.is_moe_layer(l))
      layers.push_back(l);
  if (slice.logits && model.mtp_depth > 0 && model.mtp_layers_are_moe())
    for (int k = 0; k < model.mtp_depth; ++k)
      layers.push_back(model.layers + k);
  return layers;
}

double mtp_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan,
                                     const StageSlice& slice) {
  if (!slice.logits || model.mtp_depth <= 0)
    return 0;
  return model.mtp_expert_parameters() / (double(plan.expert_tp()) * plan.ep);
}

double mtp_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, const StageSlice& slice) {
  if (!slice.logits || model.mtp_depth <= 0)
    return 0;
  return (model.mtp_parameters() - model.mtp_expert_parameters()) / plan.tp +
         mtp_expert_parameters_per_gpu(model, plan, slice);
}

double slice_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, const StageSlice& slice) {
  double parameters = 0;
  for (int l = 0; l < slice.layers; ++l)
    parameters += layer_parameters_per_gpu(model, plan, slice.first_layer + l);
  if (slice.embedding)
    parameters += model.embedding_parameters() / plan.tp;
  if (slice.logits)
    parameters += model.logits_parameters() / plan.tp;
  if (model.mtp_depth > 0)
    parameters += mtp_parameters_per_gpu(model, plan, slice);
  return parameters;
}

namespace {

// Sums `per_layer` over the layers of every chunk that pipeline rank `stage`
// holds.
// `per_slice` adds to the sum what a slice holds besides its layers
// (embedding, logits, MTP modules).
template <class PerLayer, class PerSlice>
double sum_over_stage_layers(const ModelSpec& model, const ParallelPlan& plan, int stage, PerLayer per_layer,
                             PerSlice per_slice) {
  const PipelineSchedule layout = layout_of(plan);
  double parameters = 0;
  for (int chunk = 0; chunk < layout.chunks; ++chunk) {
    const StageSlice slice = virtual_stage_slice(model, plan, layout.virtual_stage(stage, chunk));
    for (int l = 0; l < slice.layers; ++l)
      parameters += per_layer(model, plan, slice.first_layer + l);
    per_slice(slice, parameters);
  }
  return parameters;
}

}  // namespace

double stage_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage) {
  return sum_over_stage_layers(model, plan, stage, layer_parameters_per_gpu,
                               [&](const StageSlice& slice, double& parameters) {
                                 if (slice.embedding)
                                   parameters += model.embedding_parameters() / plan.tp;
                                 if (slice.logits)
                                   parameters += model.logits_parameters() / plan.tp;
                                 if (model.mtp_depth > 0)
                                   parameters += mtp_parameters_per_gpu(model, plan, slice);
                               });
}

double stage_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage) {
  return sum_over_stage_layers(model, plan, stage, layer_expert_parameters_per_gpu,
                               [&](const StageSlice& slice, double& parameters) {
                                 if (model.mtp_depth > 0)
                                   parameters += mtp_expert_parameters_per_gpu(model, plan, slice);
                               });
}

namespace detail {

// schedule_for with the cost of one GPU already divided by context parallelism.
PipelineSchedule schedule_for_gpu_costs(const ModelSpec& model, const ParallelPlan& plan,
                                        const platforms::ClusterSpec& cluster, const CostModel& cost,
                                        int micro_batches) {
  ScheduleOptions options;
  options.virtual_stages = plan.virtual_stages;
  // Megatron's merged F&B steps (plan.moe_a2a_overlap) warm up one more forward.
  if (plan.moe_a2a_overlap && plan.ep > 1 && model.is_moe())
    options.extra_warmup = 1;
  if (traits_of(plan.schedule).balances_measured_costs) {
    const PipelineSchedule layout = layout_of(plan);
    ZbvInputs& in = options.zbv;
    in.forward_s = in.backward_input_s = in.backward_weight_s = 0;
    const int stages = layout.virtual_stages();
    for (int vs = 0; vs < stages; ++vs) {
      const StageSlice slice = virtual_stage_slice(model, plan, vs);
      const auto& gpu = cluster.gpu_of(plan.gpu_of(layout.rank_of(vs), 0, 0));
      in.forward_s += cost.forward(slice, gpu).duration_s / stages;
      in.backward_input_s += cost.backward_input(slice, gpu).duration_s / stages;
      in.backward_weight_s += cost.backward_weight(slice, gpu).duration_s / stages;
    }
    in.comm_s = plan.pp > 1 ? transfer_time_s(cluster, plan.gpu_of(0, 0, 0), plan.gpu_of(1, 0, 0),
                                              pipeline_message_bytes(model, plan))
                            : 0.0;
    // zbv.py's memory approximations, per token: F stores 34h + 5as, W
    // frees 32h, B the rest.
    in.forward_memory = 34.0 * model.hidden + 5.0 * model.heads * model.seq_len;
    in.weight_memory = -32.0 * model.hidden;
  }
  return make_schedule(plan.schedule, plan.pp, micro_batches, options);
}

}  // namespace detail

PipelineSchedule schedule_for(const ModelSpec& model, const ParallelPlan& plan,
                              const platforms::ClusterSpec& cluster, const CostModel& cost) {
  return schedule_for(model, plan, cluster, cost, plan.micro_batches());
}

PipelineSchedule schedule_for(const ModelSpec& model, const ParallelPlan& plan,
                              const platforms::ClusterSpec& cluster, const CostModel& cost,
                              int micro_batches) {
  if (plan.cp > 1)
    return detail::schedule_for_gpu_costs(model, plan, cluster, ContextParallelCost(cost, plan.cp),
                                          micro_batches);
  return detail::schedule_for_gpu_costs(model, plan, cluster, cost, micro_batches);
}

}  // namespace trainsim::workloads
