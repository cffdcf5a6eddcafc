#include "sim/scenario/checks.hpp"

#include <fmt/format.h>

#include <optional>

#include "platforms/efficiency_profile.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/group_limited_routing.hpp"
#include "workloads/moe_dispatch.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::scenario {
namespace {

std::string cluster_size(const Scenario& scenario) {
  const auto& group = scenario.cluster.groups.front();
  return fmt::format("cluster.nodes {} x cluster.gpus_per_node {}", group.nodes, group.gpus_per_node);
}

// Context parallelism joins the product only when used, so that the
// messages of plans without it stay short.
std::string cp_names(const workloads::ParallelPlan& plan) {
  return plan.cp > 1 ? " x cp" : "";
}
std::string cp_value(const workloads::ParallelPlan& plan) {
  return plan.cp > 1 ? fmt::format(" x {}", plan.cp) : "";
}

}  // namespace

std::vector<platforms::Problem> resolve_plan(Scenario& scenario) {
  auto& plan = scenario.plan;
  const int gpus = scenario.cluster.gpu_count();
  const int model_parallel = plan.tp * plan.pp * plan.cp;
  if (plan.dp == 0) {
    if (model_parallel <= 0 || gpus % model_parallel != 0)
      return {{"plan.tp",
               fmt::format("tp x pp{} = {} x {}{} = {} does not divide the cluster's {} GPUs ({}), so dp "
                           "cannot be derived; expected tp x pp{} to divide {}",
                           cp_names(plan), plan.tp, plan.pp, cp_value(plan), model_parallel, gpus,
                           cluster_size(scenario), cp_names(plan), gpus)}};
    plan.dp = gpus / model_parallel;
  }
  const auto& split = scenario.layer_split;
  // A layout says how many chunks each rank holds (Megatron derives its
  // virtual pipeline size from it).
  if (plan.virtual_stages == 0 && split.pipeline_layout && plan.pp > 0)
    if (const int stages = workloads::layout_stage_count(*split.pipeline_layout); stages % plan.pp == 0)
      plan.virtual_stages = stages / plan.pp;
  if (plan.virtual_stages == 0)
    plan.virtual_stages = workloads::default_virtual_stages(plan.schedule);
  if (split.given()) {
    auto [layers, problems] =
        workloads::split_layers(split, scenario.model.layers, plan.pp, plan.model_stages() / plan.pp);
    if (!problems.empty())
      return problems;
    plan.stage_layers = std::move(layers);
  }
  return {};
}

namespace {

// FP8 needs FP8 tensor cores and curves on every GPU of the cluster (and
// block scaling in hardware for MXFP8), and the per-op cost model, which is
// what knows which kernels are GEMMs.
std::vector<platforms::Problem> precision_problems(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  std::vector<platforms::Problem> problems;
  if (!plan.fp8())
    return problems;
  if (scenario.compute_efficiency)
    problems.push_back({"plan.precision",
                        "fp8 with cluster.compute_efficiency: the flat cost model times every FLOP at one "
                        "fraction of the BF16 peak and cannot tell FP8 GEMMs from the rest; expected "
                        "precision: bf16, or cluster.compute_efficiency left out (the per-op model)"});
  for (const auto& group : scenario.cluster.groups) {
    const auto& gpu = group.gpu;
    if (gpu.peak_fp8_flops <= 0 || !platforms::efficiency_profile_of(gpu).matmul_fp8) {
      problems.push_back(
          {"plan.precision",
           fmt::format(
               "fp8 on {}, which has {}; expected precision: bf16, or GPUs with FP8 tensor cores "
               "(H100, H200, B200, MI300X, or a cluster.gpu with peak_fp8)",
               gpu.name,
               gpu.peak_fp8_flops <= 0 ? "no FP8 tensor cores (peak_fp8)" : "no FP8 GEMM efficiency data")});
    } else if (plan.fp8_recipe == workloads::Fp8Recipe::mxfp8 && !gpu.mxfp8) {
      problems.push_back(
          {"plan.fp8_recipe",
           fmt::format("mxfp8 on {}, whose tensor cores do not scale blocks of 32 elements "
                       "(MXFP8 is Blackwell's); expected delayed or current, or Blackwell GPUs",
                       gpu.name)});
    }
  }
  return problems;
}

// Where the EP groups lie over the NVLink domains (nodes), for node-limited
// routing and DeepEP's relay (workloads/moe_dispatch.hpp): every group of
// pipeline rank and TP rank 0 is looked at (the others are these shifted by
// a stage or a TP rank).
std::vector<platforms::Problem> expert_node_problems(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  const auto& moe = scenario.model.moe;
  std::vector<platforms::Problem> problems;
  const bool deepep = plan.moe_dispatcher == workloads::MoeDispatcher::deepep;
  const int stage = plan.tp * plan.cp * plan.dp;
  if (!scenario.model.is_moe() || plan.ep <= 1 || plan.gpu_count() != scenario.cluster.gpu_count() ||
      (plan.expert_tp_folded() ? stage % (plan.ep * plan.expert_tp()) != 0
                               : plan.data_parallel_size() % plan.ep != 0) ||
      (!deepep && moe.max_nodes_per_token == 0))
    return problems;
  const int gpus_per_node = scenario.cluster.groups.front().gpus_per_node;
  std::optional<workloads::EpNodes> first;
  bool uniform = true;
  for (int pp = 0; pp < plan.pp && uniform; ++pp)
    for (const auto& members : workloads::expert_parallel_groups(plan, pp)) {
      if (!uniform)
        break;
      if (workloads::expert_tensor_parallel_rank_of(plan, members.front()) != 0)
        continue;  // the groups of the other expert-TP ranks are these shifted by one GPU
      std::vector<int> domains;
      for (int gpu : members)
        domains.push_back(scenario.cluster.locate(gpu).domain);
      const auto nodes = workloads::ep_nodes_of(domains);
      if (!first)
        first = nodes;
      uniform =
          nodes.uniform() && nodes.nodes == first->nodes && nodes.ranks_per_node == first->ranks_per_node;
    }
  const std::string layout =
      plan.expert_tp_folded()
          ? fmt::format("expert_parallel {} x expert_tensor_parallel {} on {} GPUs per node", plan.ep,
                        plan.expert_tp(), gpus_per_node)
          : fmt::format("expert_parallel {} x tp {}{} on {} GPUs per node", plan.ep, plan.tp,
                        plan.cp > 1 ? fmt::format(" x cp {}", plan.cp) : "", gpus_per_node);
  if (deepep && !uniform)
    problems.push_back(
        {"plan.moe_dispatcher",
         fmt::format("deepep with {}: an EP group's GPUs are not spread in equal consecutive shares over its "
                     "nodes, so not every GPU has a peer of its local index on each node to relay through; "
                     "expected an EP group of whole nodes or within one node (e.g. tp x expert_parallel a "
                     "multiple or a divisor of {}), or moe_dispatcher: all_to_all",
                     layout, gpus_per_node)});
  // Group-limited routing changes deepep's bytes only; its groups must
  // nest with the GPUs and nodes (workloads/group_limited_routing.hpp).
  if (deepep && uniform && first)
    for (auto& problem : workloads::group_layout_problems(moe, plan.ep, *first))
      problems.push_back(std::move(problem));
  const int m = moe.max_nodes_per_token;
  if (m == 0 || !first)
    return problems;
  if (m > first->nodes) {
    problems.push_back(
        {"model.moe.max_nodes_per_token",
         fmt::format("{}, but an EP group spans {} node{} ({}); expected at most {}, or the key "
                     "left out (no limit)",
                     m, first->nodes, first->nodes == 1 ? "" : "s", layout, first->nodes)});
  } else if (first->uniform()) {
    const int per_node = moe.experts / plan.ep * first->ranks_per_node;
    if (m * per_node < moe.top_k)
      problems.push_back(
          {"model.moe.max_nodes_per_token",
           fmt::format(
               "{}: {} nodes hold {} x {} = {} experts, fewer than top_k = {} (each node of an EP group "
               "holds {} of the {} experts); expected at least {}",
               m, m, m, per_node, m * per_node, moe.top_k, per_node, moe.experts,
               (moe.top_k + per_node - 1) / per_node)});
  }
  return problems;
}

// torch's async TP copies the shards peer to peer through symmetric memory,
// which needs every GPU of a TP group to map the others' memory: one NVLink
// domain (torch.distributed._symmetric_memory's get_remote_tensors: "only when
// the group is within NVLink domain"). The TP groups of pipeline rank 0,
// replica 0 are looked at (the others are these shifted by whole groups).
std::vector<platforms::Problem> async_tp_domain_problems(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  if (!plan.torch_async_tp() || plan.tp < 2 || plan.gpu_count() != scenario.cluster.gpu_count())
    return {};
  for (int cp = 0; cp < plan.cp; ++cp) {
    const int first = plan.gpu_of(0, 0, 0, cp);
    for (int tp = 1; tp < plan.tp; ++tp) {
      const int gpu = plan.gpu_of(0, 0, tp, cp);
      if (scenario.cluster.locate(gpu).domain != scenario.cluster.locate(first).domain)
        return {{"plan.tp_comm_overlap",
                 fmt::format("torch_async with tp {}: a TP group spans GPUs {} and {} of different NVLink "
                             "domains ({} GPUs per node), and torch's async TP copies the shards between "
                             "GPUs that map each other's memory (symmetric memory over NVLink); expected tp "
                             "within one NVLink domain, or tp_comm_overlap: false",
                             plan.tp, first, gpu, scenario.cluster.groups.front().gpus_per_node)}};
    }
  }
  return {};
}

}  // namespace

std::vector<platforms::Problem> check(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  std::vector<platforms::Problem> problems;
  const int gpus = scenario.cluster.gpu_count();
  if (plan.gpu_count() != gpus) {
    // The usual cause: a what-if resized the cluster of a scenario that fixes dp.
    const int model_parallel = plan.tp * plan.pp * plan.cp;
    const std::string derive =
        model_parallel > 0 && gpus % model_parallel == 0
            ? fmt::format(", or dp: auto (--set plan.dp=auto) to derive dp = {} / {} = {}", gpus,
                          model_parallel, gpus / model_parallel)
            : std::string();
    problems.push_back(
        {"plan.dp", fmt::format("dp x tp x pp{} = {} x {} x {}{} = {} GPUs, but the cluster has {} ({}); "
                                "expected the product to equal the GPU count{}",
                                cp_names(plan), plan.dp, plan.tp, plan.pp, cp_value(plan), plan.gpu_count(),
                                gpus, cluster_size(scenario), derive)});
  }
  for (auto& problem : workloads::plan_problems(scenario.model, plan))
    problems.push_back(std::move(problem));
  for (auto& problem : precision_problems(scenario))
    problems.push_back(std::move(problem));
  for (auto& problem : expert_node_problems(scenario))
    problems.push_back(std::move(problem));
  for (auto& problem : async_tp_domain_problems(scenario))
    problems.push_back(std::move(problem));
  return problems;
}

}  // namespace trainsim::scenario
