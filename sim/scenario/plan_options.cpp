// The `plan` keys for the parallelism options beyond dp / tp / pp and the
// schedule: sequence, context and expert parallelism, ZeRO / FSDP (and its
// hybrid sharding), the framework (Megatron or PyTorch FSDP / FSDP2), TP
// communication overlap, the GEMMs' precision (FP8) and gradient bucketing.
// Their rules: workloads/plan_checks.cpp.
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
  if (auto etp = p.integer("expert_tensor_parallel", 1, kMaxCount))
    plan.etp = static_cast<int>(*etp);
  using workloads::MoeDispatcher;
  if (auto d = p.choice<MoeDispatcher>(
          "moe_dispatcher", {{"all_to_all", MoeDispatcher::all_to_all}, {"deepep", MoeDispatcher::deepep}}))
    plan.moe_dispatcher = *d;
  if (auto fp8 = p.boolean("moe_fp8_dispatch"))
    plan.moe_fp8_dispatch = *fp8;
  if (auto overlap = p.boolean("moe_a2a_overlap"))
    plan.moe_a2a_overlap = *overlap;
  if (auto delay = p.boolean("delay_wgrad_compute"))
    plan.delay_wgrad_compute = *delay;
  if (auto zero = p.integer("zero_stage", 0, 3))
    plan.zero_stage = static_cast<int>(*zero);
  if (auto shard = p.integer("dp_shard", 1, kMaxCount))
    plan.dp_shard = static_cast<int>(*shard);
  using workloads::Framework;
  if (auto f = p.choice<Framework>("framework", {{"megatron", Framework::megatron},
                                                 {"pytorch_fsdp", Framework::pytorch_fsdp},
                                                 {"pytorch_fsdp2", Framework::pytorch_fsdp2}}))
    plan.framework = *f;
  using workloads::TpCommOverlap;
  if (auto overlap =
          p.choice<TpCommOverlap>("tp_comm_overlap", {{"false", TpCommOverlap::none},
                                                      {"true", TpCommOverlap::userbuffers},
                                                      {"torch_async", TpCommOverlap::torch_async}}))
    plan.tp_comm_overlap = *overlap;
  using workloads::Fp8Recipe;
  using workloads::Precision;
  if (auto precision = p.choice<Precision>("precision", {{"bf16", Precision::bf16}, {"fp8", Precision::fp8}}))
    plan.precision = *precision;
  if (auto recipe = p.choice<Fp8Recipe>(
          "fp8_recipe",
          {{"delayed", Fp8Recipe::delayed}, {"current", Fp8Recipe::current}, {"mxfp8", Fp8Recipe::mxfp8}}))
    plan.fp8_recipe = *recipe;
  if (auto gather = p.boolean("fp8_param_gather"))
    plan.fp8_param_gather = *gather;
  if (auto reshard = p.boolean("reshard_after_forward"))
    plan.reshard_after_forward = *reshard;
  if (auto reduce = p.choice<bool>("grad_reduce", {{"per_micro_batch", false}, {"per_step", true}}))
    plan.grad_reduce_per_step = *reduce;
  if (auto overlap = p.boolean("overlap_grad_reduce"))
    plan.overlap_grad_reduce = *overlap;
  if (auto overlap = p.boolean("overlap_param_gather"))
    plan.overlap_param_gather = *overlap;
  if (auto bucket = p.bytes("grad_bucket_size")) {
    if (*bucket <= 0)
      p.error("grad_bucket_size",
              fmt::format("{} bytes; expected a positive size such as 25MB or 40MiB", *bucket));
    else
      plan.grad_bucket_bytes = *bucket;
  }
}

}  // namespace trainsim::scenario
