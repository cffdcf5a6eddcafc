#include "workloads/expert_parallel.hpp"

namespace trainsim::workloads {

double layer_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  const double experts = model.expert_parameters(layer);
  return (model.layer_parameters(layer) - experts) / plan.tp + experts / (double(plan.expert_tp()) * plan.ep);
}

double layer_expert_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int layer) {
  return model.expert_parameters(layer) / (double(plan.expert_tp()) * plan.ep);
}

double ep_all_to_all_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  const double tokens = double(plan.micro_batch_size) * model.seq_len / plan.cp /
                        (plan.sequence_parallel && plan.tp > 1 ? plan.tp : 1);
  return 2.0 * tokens * model.moe.top_k * model.hidden * model.moe.capacity_factor;
}

int ep_all_to_alls(const ParallelPlan& plan, PipeOpKind kind, int moe_layers) {
  switch (kind) {
    case PipeOpKind::forward:
      return 2 * moe_layers;
    case PipeOpKind::backward:
    case PipeOpKind::backward_input:
      return (plan.recompute == Recompute::full ? 4 : 2) * moe_layers;
    case PipeOpKind::backward_weight:
      return 0;
  }
  return 0;
}

bool has_expert_tp_collectives(const ModelSpec& model, const ParallelPlan& plan) {
  return model.is_moe() && plan.expert_tp() > 1 && plan.expert_tp() != plan.tp &&
         plan.moe_dispatcher != MoeDispatcher::deepep;
}

bool dispatch_spans_expert_tp(const ModelSpec& model, const ParallelPlan& plan) {
  return model.is_moe() && plan.expert_tp() > 1 && plan.expert_tp() != plan.tp &&
         plan.moe_dispatcher == MoeDispatcher::deepep;
}

double expert_tp_collective_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return plan.expert_tp() * ep_all_to_all_bytes(model, plan);
}

int expert_tp_collective_pairs(const ParallelPlan& plan, PipeOpKind kind, int moe_layers) {
  return ep_all_to_alls(plan, kind, moe_layers) / 2;
}

namespace {

// A GPU's index among the tp x cp x dp GPUs of its stage, in rank order.
int ep_layout_stage_index(const ParallelPlan& plan, int gpu) {
  return gpu % (plan.tp * plan.cp * plan.dp);
}
int ep_layout_stage_first_gpu(const ParallelPlan& plan, int pp_rank) {
  return pp_rank * plan.tp * plan.cp * plan.dp;
}

}  // namespace

std::vector<std::vector<int>> expert_parallel_groups(const ParallelPlan& plan, int pp_rank) {
  const int etp = plan.expert_tp();
  const int edp = plan.expert_data_parallel_size();
  const int base = ep_layout_stage_first_gpu(plan, pp_rank);
  std::vector<std::vector<int>> groups;
  for (int t = 0; t < etp; ++t)
    for (int q = 0; q < edp; ++q) {
      std::vector<int> members;
      for (int e = 0; e < plan.ep; ++e)
        members.push_back(base + t + etp * (e + plan.ep * q));
      groups.push_back(std::move(members));
    }
  return groups;
}

std::vector<std::vector<int>> moe_dispatch_groups(const ModelSpec& model, const ParallelPlan& plan,
                                                  int pp_rank) {
  if (!dispatch_spans_expert_tp(model, plan))
    return expert_parallel_groups(plan, pp_rank);
  const int block = plan.expert_tp() * plan.ep;
  const int base = ep_layout_stage_first_gpu(plan, pp_rank);
  std::vector<std::vector<int>> groups;
  for (int q = 0; q < plan.expert_data_parallel_size(); ++q) {
    std::vector<int> members;
    for (int m = 0; m < block; ++m)
      members.push_back(base + block * q + m);
    groups.push_back(std::move(members));
  }
  return groups;
}

std::vector<std::vector<int>> expert_data_parallel_groups(const ParallelPlan& plan, int pp_rank) {
  const int etp = plan.expert_tp();
  const int edp = plan.expert_data_parallel_size();
  const int base = ep_layout_stage_first_gpu(plan, pp_rank);
  std::vector<std::vector<int>> groups;
  for (int t = 0; t < etp; ++t)
    for (int e = 0; e < plan.ep; ++e) {
      std::vector<int> members;
      for (int q = 0; q < edp; ++q)
        members.push_back(base + t + etp * (e + plan.ep * q));
      groups.push_back(std::move(members));
    }
  return groups;
}

int expert_parallel_rank_of(const ParallelPlan& plan, int gpu) {
  return ep_layout_stage_index(plan, gpu) / plan.expert_tp() % plan.ep;
}

int expert_tensor_parallel_rank_of(const ParallelPlan& plan, int gpu) {
  return ep_layout_stage_index(plan, gpu) % plan.expert_tp();
}

}  // namespace trainsim::workloads
