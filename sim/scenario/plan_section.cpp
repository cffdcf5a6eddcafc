// The `plan` section: dp, tp, pp, the batch, the schedule, recomputation;
// the parallelism options (plan_options.cpp) and the heterogeneous-cluster
// keys are read with it. Its rules live in workloads/plan_checks.cpp and
// sim/scenario/checks.cpp.
#include <fmt/format.h>

#include "sim/scenario/key_aliases.hpp"
#include "sim/scenario/sections.hpp"
#include "workloads/recompute_modules.hpp"
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
  // Not given: the schedule's default (workloads::resolved_p2p).
  if (auto mode = p.choice<workloads::P2pMode>("p2p", {{"sync", workloads::P2pMode::sync},
                                                       {"async", workloads::P2pMode::async},
                                                       {"overlap", workloads::P2pMode::overlap}}))
    plan.p2p = *mode;
  // Precision of the DP gradient all-reduce: 16-bit gradients, or fp32 main
  // gradients (Megatron's --accumulate-allreduce-grads-in-fp32).
  if (auto bytes = p.choice<int>("grad_allreduce_dtype", {{"bf16", 2}, {"fp16", 2}, {"fp32", 4}}))
    plan.grad_bytes = *bytes;
  if (auto r = p.choice<Recompute>("recompute", {{"none", Recompute::none},
                                                 {"selective", Recompute::selective},
                                                 {"full", Recompute::full},
                                                 {"selective_op", Recompute::selective_op}}))
    plan.recompute = *r;
  // Megatron's --recompute-modules, as words separated by spaces or commas.
  if (auto text = p.text("recompute_modules")) {
    std::string word;
    std::vector<std::string> words;
    for (char c : *text + " ") {
      if (c == ' ' || c == ',') {
        if (!word.empty())
          words.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
    if (words.empty())
      p.error("recompute_modules",
              "is empty; expected Megatron's module names, e.g. \"mla_up_proj moe_act\"");
    for (const auto& w : words) {
      if (auto module = workloads::recompute_module_named(w))
        plan.recompute_modules.push_back(*module);
      else
        p.error("recompute_modules",
                fmt::format(
                    "has \"{}\", which trainsim does not model; expected core_attn, mla_up_proj, moe_act or "
                    "mlp (Megatron's layernorm, moe, shared_experts are not modelled)",
                    w));
    }
  }
  read_parallelism_options(p, scenario);
  read_partition_options(p, scenario);
  p.finish();
  return p.error_count() == before;
}

void read_partition_options(platforms::MapReader& p, Scenario& scenario) {
  auto& plan = scenario.plan;
  if (auto layers = p.integer_list("stage_layers", 0, kMaxCount))
    plan.stage_layers.assign(layers->begin(), layers->end());
  // Megatron's ways of asking for a partition (workloads/layer_split.hpp),
  // each an alternative to listing it.
  auto& split = scenario.layer_split;
  if (auto first = p.integer("first_stage_layers", 0, kMaxCount))
    split.first_stage_layers = static_cast<int>(*first);
  if (auto last = p.integer("last_stage_layers", 0, kMaxCount))
    split.last_stage_layers = static_cast<int>(*last);
  if (auto embedding = p.boolean("embedding_in_split"))
    split.embedding_in_split = *embedding;
  if (auto loss = p.boolean("loss_in_split"))
    split.loss_in_split = *loss;
  if (auto layout = p.text("pipeline_layout"))
    split.pipeline_layout = *layout;
  if (p.has("stage_layers") && split.given())
    for (const char* key : {"first_stage_layers", "last_stage_layers", "embedding_in_split", "loss_in_split",
                            "pipeline_layout"})
      if (p.has(key))
        p.error(key,
                "given with stage_layers, which lists every stage's layers already; expected one of the "
                "two");
  if (auto shares = p.integer_list("dp_micro_batches", 0, kMaxCount))
    plan.dp_micro_batches.assign(shares->begin(), shares->end());
}

}  // namespace trainsim::scenario
