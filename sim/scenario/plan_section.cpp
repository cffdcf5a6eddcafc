// The `plan` section and the rules that tie plan, model and cluster together.
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
  if (auto s =
          p.choice<ScheduleKind>("schedule", {{"gpipe", ScheduleKind::gpipe},
                                              {"1f1b", ScheduleKind::one_f_one_b},
                                              {"interleaved_1f1b", ScheduleKind::interleaved_one_f_one_b},
                                              {"zb_h1", ScheduleKind::zb_h1},
                                              {"zb_h2", ScheduleKind::zb_h2},
                                              {"zb_v", ScheduleKind::zb_v},
                                              {"bpipe", ScheduleKind::bpipe},
                                              {"dualpipe_v", ScheduleKind::dualpipe_v}}))
    plan.schedule = *s;
  // 0: not given; validate_scenario applies the schedule's default.
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

void validate_scenario(platforms::MapReader& p, Scenario& scenario) {
  auto& plan = scenario.plan;
  const auto& model = scenario.model;
  const int gpus = scenario.cluster.gpu_count();
  const auto& group = scenario.cluster.groups.front();
  const std::string cluster_size =
      fmt::format("cluster.nodes {} x cluster.gpus_per_node {}", group.nodes, group.gpus_per_node);
  // Context parallelism joins the product only when used, so that the
  // messages of plans without it stay as they were.
  const std::string cp_names = plan.cp > 1 ? " x cp" : "";
  const std::string cp_value = plan.cp > 1 ? fmt::format(" x {}", plan.cp) : "";
  const int model_parallel = plan.tp * plan.pp * plan.cp;
  if (plan.dp == 0) {
    if (gpus % model_parallel != 0) {
      p.error("tp",
              fmt::format(
                  "tp x pp{} = {} x {}{} = {} does not divide the cluster's {} GPUs ({}), so dp cannot be "
                  "derived; expected tp x pp{} to divide {}",
                  cp_names, plan.tp, plan.pp, cp_value, model_parallel, gpus, cluster_size, cp_names, gpus));
      return;
    }
    plan.dp = gpus / model_parallel;
  }
  if (plan.gpu_count() != gpus) {
    // The usual cause: a what-if resized the cluster of a scenario that fixes dp.
    const std::string derive =
        gpus % model_parallel == 0
            ? fmt::format(", or dp: auto (--set plan.dp=auto) to derive dp = {} / {} = {}", gpus,
                          model_parallel, gpus / model_parallel)
            : std::string();
    p.error("dp",
            fmt::format(
                "dp x tp x pp{} = {} x {} x {}{} = {} GPUs, but the cluster has {} ({}); expected the "
                "product to equal the GPU count{}",
                cp_names, plan.dp, plan.tp, plan.pp, cp_value, plan.gpu_count(), gpus, cluster_size, derive));
  }
  bool batch_ok = true;
  if (!plan.dp_micro_batches.empty()) {
    batch_ok = validate_dp_micro_batches(p, scenario);
  } else if (plan.global_batch_size % (plan.micro_batch_size * plan.dp) != 0) {
    batch_ok = false;
    p.error(
        "global_batch_size",
        fmt::format("{} is not divisible by micro_batch_size x dp = {} x {} = {}; expected a multiple of {} "
                    "(or uneven shares in plan.dp_micro_batches)",
                    plan.global_batch_size, plan.micro_batch_size, plan.dp, plan.micro_batch_size * plan.dp,
                    plan.micro_batch_size * plan.dp));
  }
  bool layers_ok = true;
  if (plan.stage_layers.empty() && model.layers % plan.pp != 0) {
    layers_ok = false;
    p.error("pp",
            fmt::format("model.layers = {} is not divisible by pp = {}; expected a divisor of {} (or an "
                        "uneven partition in plan.stage_layers)",
                        model.layers, plan.pp, model.layers));
  }
  // Schedule rules (model chunks per GPU, micro-batch counts), checked once
  // the shapes they depend on are known to be right.
  if (plan.virtual_stages == 0)
    plan.virtual_stages = workloads::default_virtual_stages(plan.schedule);
  if (plan.virtual_stages == 0) {
    p.error("virtual_stages", fmt::format("missing: schedule {} needs the number of model chunks per GPU "
                                          "(expected an integer >= 2, e.g. virtual_stages: 2)",
                                          to_string(plan.schedule)));
  } else {
    if (!plan.stage_layers.empty())
      layers_ok = validate_stage_layers(p, scenario);
    if (layers_ok && batch_ok)
      for (const auto& problem : workloads::schedule_problems(plan, model.layers))
        p.error(problem.key, problem.message);
  }
  if (model.heads % plan.tp != 0)
    p.error("tp", fmt::format("model.heads = {} is not divisible by tp = {}; expected a divisor of {}",
                              model.heads, plan.tp, model.heads));
  validate_parallelism_options(p, scenario);
}

}  // namespace trainsim::scenario
