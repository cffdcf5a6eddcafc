#include "sim/scenario/checks.hpp"

#include <fmt/format.h>

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
  if (plan.virtual_stages == 0)
    plan.virtual_stages = workloads::default_virtual_stages(plan.schedule);
  return {};
}

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
  return problems;
}

}  // namespace trainsim::scenario
