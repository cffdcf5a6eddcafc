// The `plan` section: dp, tp, pp, the batch, the schedule, recomputation;
// the parallelism options (plan_options.cpp) and the heterogeneous-cluster
// keys are read with it. Its rules live in workloads/plan_checks.cpp and
// sim/scenario/checks.cpp.
#include <fmt/format.h>

#include "sim/scenario/key_aliases.hpp"
#include "sim/scenario/sections.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::scenario {

bool read_plan_section(platforms::MapReader& p, Scenario& scenario) {
  using workloads::Recompute;
  using workloads::ScheduleKind;
  const std::size_t before = p.error_count();
  p.set_aliases(kPlanKeyAliases);
  auto& plan = scenario.plan;
  plan.dp = 0;  // 0: derive from the GPU count ("auto")
  if (auto text = p.text("dp"); text && *text != "auto") {
    if (auto dp = p.integer("dp", 1, kMaxCount))
      plan.dp = static_cast<int>(*dp);
  }
  plan.tp = static_cast<int>(p.integer("tp", 1, kMaxCount).value_or(1));
  plan.pp = static_cast<int>(p.integer("pp", 1, kMaxCount).value_or(1));
  plan.micro_batch_size = static_cast<int>(p.integer("micro_batch_size", 1, kMaxCount).value_or(1));
  if (auto gbs = p.integer("global_batch_size", 1, kMaxCount))
    plan.global_batch_size = static_cast<int>(*gbs);
  else if (!p.has("global_batch_size"))
    p.error("global_batch_size", "missing (expected the global batch in sequences, an integer >= 1)");
  std::vector<std::pair<std::string_view, ScheduleKind>> schedules;
  for (const auto& traits : workloads::schedule_table())
    schedules.emplace_back(traits.name, traits.kind);
  if (auto s = p.choice<ScheduleKind>("schedule", schedules))
    plan.schedule = *s;
  // 0: not given; resolve_plan applies the schedule's default.
  plan.virtual_stages = static_cast<int>(p.integer("virtual_stages", 1, kMaxCount).value_or(0));
  // Precision of the DP gradient all-reduce: 16-bit gradients, or fp32 main
  // gradients (Megatron's --accumulate-allreduce-grads-in-fp32).
  if (auto bytes = p.choice<int>("grad_allreduce_dtype", {{"bf16", 2}, {"fp16", 2}, {"fp32", 4}}))
    plan.grad_bytes = *bytes;
  if (auto r = p.choice<Recompute>(
          "recompute",
          {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}}))
    plan.recompute = *r;
  read_parallelism_options(p, scenario);
  read_partition_options(p, scenario);
  p.finish();
  return p.error_count() == before;
}

void read_partition_options(platforms::MapReader& p, Scenario& scenario) {
  auto& plan = scenario.plan;
  if (auto layers = p.integer_list("stage_layers", 0, kMaxCount))
    plan.stage_layers.assign(layers->begin(), layers->end());
  if (auto shares = p.integer_list("dp_micro_batches", 0, kMaxCount))
    plan.dp_micro_batches.assign(shares->begin(), shares->end());
}

}  // namespace trainsim::scenario
