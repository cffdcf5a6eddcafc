// The `plan` keys for the parallelism options beyond dp / tp / pp and the
// schedule: sequence and context parallelism, ZeRO / FSDP and gradient
// bucketing, and the rules that tie them to the rest of the scenario.
#include <fmt/format.h>

#include "sim/scenario_sections.hpp"

namespace trainsim::sim {

void read_parallelism_options(MapReader& p, Scenario& scenario) {
  auto& plan = scenario.plan;
  if (auto sp = p.boolean("sequence_parallel"))
    plan.sequence_parallel = *sp;
  if (auto cp = p.integer("context_parallel", 1, kMaxCount))
    plan.cp = static_cast<int>(*cp);
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

void validate_parallelism_options(MapReader& p, Scenario& scenario) {
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

}  // namespace trainsim::sim
