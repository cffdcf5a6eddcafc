#include "sim/scenario/memory_check.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "platforms/units.hpp"
#include "sim/scenario/cost_model_choice.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::scenario {

workloads::MemoryEstimate estimate_scenario_memory(const Scenario& scenario, int micro_batches) {
  const auto cost = make_cost_model(scenario);
  const auto schedule =
      workloads::schedule_for(scenario.model, scenario.plan, scenario.cluster, *cost,
                              micro_batches > 0 ? micro_batches : scenario.plan.micro_batches());
  return workloads::estimate_memory(scenario.model, scenario.plan, schedule);
}

std::vector<std::string> memory_problems(const Scenario& scenario) {
  using units::format_bytes;
  using workloads::MemoryKind;
  // A replayed trace says nothing about memory: nothing to check.
  if (scenario.workload)
    return {};
  const auto& plan = scenario.plan;
  // Replicas with uneven micro-batch shares (plan.dp_micro_batches) run
  // different schedules: each share is checked on its own replicas' GPUs.
  std::vector<int> shares;
  for (int dp = 0; dp < plan.dp; ++dp)
    if (std::find(shares.begin(), shares.end(), plan.micro_batches_of(dp)) == shares.end())
      shares.push_back(plan.micro_batches_of(dp));
  std::sort(shares.begin(), shares.end());
  // Every stage that does not fit: the first is described in full, the
  // others named after it with their peaks (one message, not one per stage).
  struct Overflow {
    int gpu;
    int count;
    double capacity_bytes;
    workloads::StageMemoryEstimate stage;
  };
  std::vector<Overflow> overflows;
  for (const int m : shares) {
    const auto estimate = estimate_scenario_memory(scenario, m);
    for (const auto& stage : estimate.stages) {
      // The stage's GPU with the least memory.
      int gpu = -1, count = 0;
      for (int g = 0; g < plan.gpu_count(); ++g) {
        if (plan.pp_rank_of(g) != stage.stage || plan.micro_batches_of(plan.dp_rank_of(g)) != m)
          continue;
        // Imbalanced routing: the GPUs of the stage's busiest EP rank.
        if (stage.ep_rank >= 0 && workloads::expert_parallel_rank_of(plan, g) != stage.ep_rank)
          continue;
        ++count;
        if (gpu < 0 || scenario.cluster.gpu_of(g).hbm_bytes < scenario.cluster.gpu_of(gpu).hbm_bytes)
          gpu = g;
      }
      const double capacity = scenario.cluster.gpu_of(gpu).hbm_bytes;
      if (stage.peak_bytes > capacity)
        overflows.push_back({gpu, count, capacity, stage});
    }
  }
  if (overflows.empty())
    return {};
  const auto worst = overflows.begin();  // in stage order
  const auto& stage = worst->stage;
  const auto& spec = scenario.cluster.gpu_of(worst->gpu);
  const auto& b = stage.at_peak;
  const std::string others = worst->count > 1 ? fmt::format(", like the stage's other {} GPU{}",
                                                            worst->count - 1, worst->count > 2 ? "s" : "")
                                              : "";
  std::string also;
  for (const auto& o : overflows)
    if (&o != &*worst)
      also += fmt::format("{}stage {} ({} on GPU {})", also.empty() ? "" : ", ", o.stage.stage,
                          format_bytes(o.stage.peak_bytes), o.gpu);
  return {fmt::format(
      "does not fit in GPU memory: GPU {} (pipeline stage {}, node {}{}) needs {} at its peak{}, but the {} "
      "has "
      "{}: weights {}, gradients {}, optimizer state {}, activations {} ({} micro-batch forward{} held), "
      "buffers {}{}; expected a plan that fits (recompute: selective or full, a smaller micro_batch_size, "
      "more "
      "tp or pp, sequence_parallel, zero_stage 1-3)",
      worst->gpu, stage.stage, scenario.cluster.locate(worst->gpu).node, others,
      format_bytes(stage.peak_bytes),
      stage.peak_op.empty() ? std::string() : fmt::format(" (at {})", stage.peak_op), spec.name,
      format_bytes(spec.hbm_bytes), format_bytes(b[MemoryKind::weights]),
      format_bytes(b[MemoryKind::gradients]), format_bytes(b[MemoryKind::optimizer]),
      format_bytes(b[MemoryKind::activations]), stage.max_forwards_held,
      stage.max_forwards_held == 1 ? "" : "s", format_bytes(b[MemoryKind::buffers]),
      also.empty() ? std::string() : fmt::format("; nor do {}", also))};
}

std::vector<int> ranks_out_of_memory(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  std::vector<int> ranks;
  for (int dp = 0; dp < plan.dp; ++dp) {
    const int m = plan.micro_batches_of(dp);
    if (std::find(plan.dp_micro_batches.begin(), plan.dp_micro_batches.begin() + dp, m) !=
        plan.dp_micro_batches.begin() + dp)
      continue;  // this share was checked with an earlier replica
    const auto estimate = estimate_scenario_memory(scenario, m);
    for (const auto& stage : estimate.stages)
      for (int g = 0; g < plan.gpu_count(); ++g)
        if (plan.pp_rank_of(g) == stage.stage && plan.micro_batches_of(plan.dp_rank_of(g)) == m &&
            stage.peak_bytes > scenario.cluster.gpu_of(g).hbm_bytes) {
          if (std::find(ranks.begin(), ranks.end(), stage.stage) == ranks.end())
            ranks.push_back(stage.stage);
          break;
        }
    if (plan.dp_micro_batches.empty())
      break;  // every replica runs the same schedule
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

}  // namespace trainsim::scenario
