// The `plan` keys for the parallelism options beyond dp / tp / pp and the
// schedule: sequence and context parallelism, ZeRO / FSDP and gradient
// bucketing, and the rules that tie them to the rest of the scenario.
#include <fmt/format.h>

#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {

void read_parallelism_options(platforms::MapReader& p, Scenario& scenario) {
  auto& plan = scenario.plan;
  if (auto sp = p.boolean("sequence_parallel"))
    plan.sequence_parallel = *sp;
  if (auto cp = p.integer("context_parallel", 1, kMaxCount))
    plan.cp = static_cast<int>(*cp);
  if (auto ep = p.integer("expert_parallel", 1, kMaxCount))
    plan.ep = static_cast<int>(*ep);
  if (auto zero = p.integer("zero_stage", 0, 3))
    plan.zero_stage = static_cast<int>(*zero);
  if (auto overlap = p.boolean("overlap_grad_reduce"))
    plan.overlap_grad_reduce = *overlap;
  if (auto bucket = p.bytes("grad_bucket_size")) {
    if (*bucket <= 0)
      p.error("grad_bucket_size",
              fmt::format("{} bytes; expected a positive size such as 25MB or 40MiB", *bucket));
    else
      plan.grad_bucket_bytes = *bucket;
  }
}

namespace {

// plan.expert_parallel (workloads/expert_parallel.hpp): Megatron-core's
// rules, and what trainsim's builder supports.
void validate_expert_parallel(platforms::MapReader& p, const Scenario& scenario) {
  const auto& plan = scenario.plan;
  const auto& model = scenario.model;
  if (plan.ep <= 1)
    return;
  const std::string key = "expert_parallel";
  if (!model.is_moe()) {
    p.error(key, fmt::format("{} with a dense model ({}): expert parallelism spreads the experts of MoE "
                             "layers; expected expert_parallel: 1, or a model with model.moe (e.g. preset "
                             "mixtral-8x7b)",
                             plan.ep, model.name));
    return;
  }
  if (model.moe.experts % plan.ep != 0)
    p.error(key, fmt::format("{} does not divide model.moe.experts = {}; expected a divisor of {}", plan.ep,
                             model.moe.experts, model.moe.experts));
  const int positions = plan.data_parallel_size();
  if (positions % plan.ep != 0)
    p.error(key, fmt::format("{} does not divide dp x cp = {} x {} = {}: the EP group is formed within the "
                             "data-parallel (and context-parallel) GPUs, as in Megatron-core; expected a "
                             "divisor of {}",
                             plan.ep, plan.dp, plan.cp, positions, positions));
  if (plan.tp > 1 && !plan.sequence_parallel)
    p.error(key, fmt::format("{} with tp = {} needs sequence_parallel: true (Megatron requires sequence "
                             "parallelism for MoE with tensor parallelism: each TP rank dispatches its own "
                             "share of the tokens); expected sequence_parallel: true",
                             plan.ep, plan.tp));
  if (plan.zero_stage >= 2)
    p.error(key, fmt::format("{} with zero_stage {}: trainsim's expert parallelism supports ZeRO stages 0 "
                             "and 1 (the distributed optimizer); expected zero_stage 0 or 1, or "
                             "expert_parallel: 1",
                             plan.ep, plan.zero_stage));
  if (!plan.dp_micro_batches.empty())
    p.error(key, fmt::format("{} with dp_micro_batches: an EP group's all-to-alls join GPUs of different "
                             "data-parallel replicas, which must then run the same micro-batches; expected "
                             "no dp_micro_batches, or expert_parallel: 1",
                             plan.ep));
  if (plan.overlap_grad_reduce)
    p.error(key, fmt::format("{} with overlap_grad_reduce: trainsim reduces MoE gradients (dense and expert "
                             "groups) after the backward; expected overlap_grad_reduce: false, or "
                             "expert_parallel: 1",
                             plan.ep));
}

}  // namespace

void validate_parallelism_options(platforms::MapReader& p, Scenario& scenario) {
  const auto& plan = scenario.plan;
  const auto& model = scenario.model;
  if (plan.sequence_parallel && plan.tp < 2)
    p.error("sequence_parallel",
            fmt::format(
                "true with tp = {}: sequence parallelism splits the activations and the layer-norm and "
                "dropout work over the tensor-parallel group; expected tp >= 2, or sequence_parallel: false",
                plan.tp));
  if (plan.cp > 1 && model.seq_len % (2 * plan.cp) != 0)
    p.error("context_parallel",
            fmt::format(
                "{} does not suit model.seq_len = {}: ring attention splits each sequence into 2 x "
                "context_parallel = {} chunks (Megatron's load-balanced split); expected seq_len divisible "
                "by {}",
                plan.cp, model.seq_len, 2 * plan.cp, 2 * plan.cp));
  validate_expert_parallel(p, scenario);
  if (plan.zero_stage == 3) {
    for (const char* key : {"overlap_grad_reduce", "grad_bucket_size"})
      if (p.has(key))
        p.error(key,
                "does not apply with zero_stage 3: FSDP reduce-scatters each layer's gradients as soon as "
                "its backward ends (the layers are its buckets); expected the key left out");
  } else if (p.has("grad_bucket_size") && !plan.overlap_grad_reduce) {
    p.error("grad_bucket_size",
            "given with overlap_grad_reduce off: without overlap the gradients are reduced in one collective "
            "after the backward; expected overlap_grad_reduce: true, or the key left out");
  }
}

}  // namespace trainsim::scenario
