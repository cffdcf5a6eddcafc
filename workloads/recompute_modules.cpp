#include "workloads/recompute_modules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace trainsim::workloads {
namespace {

// The op's name up to its pass suffix: "q_up" for "q_up.quantize".
std::string_view module_base_name(std::string_view name) {
  return name.substr(0, name.find('.'));
}

bool in_module(const TransformerOp& op, RecomputeModule module) {
  const std::string_view base = module_base_name(op.name);
  switch (module) {
    case RecomputeModule::core_attn:
      return op.attention_core;
    case RecomputeModule::mla_up_proj:  // transformer_ops.cpp, mla_attention
      return base == "q_up" || base == "q_proj" || base == "kv_up" || base == "rope";
    case RecomputeModule::moe_act:
      return base == "experts_act";
    case RecomputeModule::mlp:  // a dense layer's (a MoE layer has none of these names)
      return base == "mlp_up" || base == "swiglu" || base == "gelu" || base == "mlp_down";
  }
  return false;
}

}  // namespace

std::optional<RecomputeModule> recompute_module_named(std::string_view word) {
  for (RecomputeModule m : {RecomputeModule::core_attn, RecomputeModule::mla_up_proj,
                            RecomputeModule::moe_act, RecomputeModule::mlp})
    if (to_string(m) == word)
      return m;
  return std::nullopt;
}

bool recomputes_module(const ParallelPlan& plan, RecomputeModule module) {
  if (plan.recompute_modules.empty())
    return module == RecomputeModule::core_attn;
  return std::find(plan.recompute_modules.begin(), plan.recompute_modules.end(), module) !=
         plan.recompute_modules.end();
}

bool selectively_recomputed(const TransformerOp& op, const ParallelPlan& plan) {
  if (op.pass != OpPass::forward)
    return false;
  for (RecomputeModule m : {RecomputeModule::core_attn, RecomputeModule::mla_up_proj,
                            RecomputeModule::moe_act, RecomputeModule::mlp})
    if (recomputes_module(plan, m) && in_module(op, m))
      return true;
  return false;
}

double selective_recomputed_layer_flops(const ModelSpec& model, const ParallelPlan& plan, bool moe_layer) {
  const double b = plan.micro_batch_size;
  const double tokens = b * model.seq_len;
  double flops = 0;
  if (recomputes_module(plan, RecomputeModule::core_attn))
    flops += model.attention_core_forward_flops(b);
  if (recomputes_module(plan, RecomputeModule::mla_up_proj) && model.is_mla()) {
    // q_up from the query latent (q_proj from the hidden state without
    // query compression), kv_up from the key/value latent.
    const auto& a = model.mla;
    const double query_in = a.q_lora_rank > 0 ? double(a.q_lora_rank) : double(model.hidden);
    flops += 2 * tokens * model.heads *
             (query_in * a.qk_head_dim() + double(a.kv_lora_rank) * (a.qk_nope_head_dim + a.v_head_dim));
  }
  if (recomputes_module(plan, RecomputeModule::mlp) && !moe_layer)
    flops += 2 * tokens * (model.swiglu ? 3.0 : 2.0) * model.hidden * model.ffn_hidden;
  // moe_act redoes element-wise kernels only.
  return flops / plan.tp;
}

std::vector<platforms::Problem> recompute_modules_problems(const ModelSpec& model, const ParallelPlan& plan) {
  std::vector<platforms::Problem> problems;
  if (plan.recompute_modules.empty())
    return problems;
  auto add = [&](std::string why) { problems.push_back({"plan.recompute_modules", std::move(why)}); };
  if (plan.recompute != Recompute::selective) {
    add(
        fmt::format("given with recompute {}: Megatron's modules are what selective recomputation redoes; "
                    "expected recompute: selective, or the key left out",
                    to_string(plan.recompute)));
    return problems;
  }
  for (std::size_t i = 0; i < plan.recompute_modules.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (plan.recompute_modules[i] == plan.recompute_modules[j])
        add(fmt::format("lists {} twice; expected each module once", to_string(plan.recompute_modules[i])));
  if (recomputes_module(plan, RecomputeModule::mla_up_proj) && !model.is_mla())
    add("lists mla_up_proj with model.attention not mla (Megatron: \"mla_up_proj in recompute_modules is "
        "only "
        "supported with multi-latent attention\"); expected core_attn, moe_act or mlp");
  if (recomputes_module(plan, RecomputeModule::moe_act) && !model.is_moe())
    add("lists moe_act with a dense model (no routed experts); expected core_attn, mla_up_proj or mlp");
  if (recomputes_module(plan, RecomputeModule::mlp) && model.is_moe() &&
      model.moe_layers_in(0, model.layers) == model.layers)
    add("lists mlp with every layer a MoE layer: Megatron recomputes the dense layers' MLP only, and this "
        "model "
        "has none; expected core_attn, mla_up_proj or moe_act");
  return problems;
}

}  // namespace trainsim::workloads
