#include "workloads/planning/plan_space.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "workloads/layer_split.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0)
      out.push_back(d);
  return out;
}

template <class T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? fallback : given;
}

// The dp_shard values a candidate of ZeRO stage `zero` over `positions`
// (dp x cp) GPUs takes, in the order given: 0 (full sharding) for the other
// stages; for FSDP each value that divides positions, a value reaching
// positions read as full sharding, each once.
std::vector<int> shards_of(int zero, int positions, const std::vector<int>& values) {
  if (zero != 3)
    return {0};
  std::vector<int> out;
  for (int v : values) {
    const int shard = v <= 0 || v >= positions ? 0 : v;
    if (shard > 0 && positions % shard != 0)
      continue;
    if (std::find(out.begin(), out.end(), shard) == out.end())
      out.push_back(shard);
  }
  return out;
}

std::optional<std::vector<int>> light_last_stage(int layers, int pp, int v);

// The layers of each virtual stage a candidate runs: the even split (empty)
// when pp x v divides the layers, else Megatron's split counting the
// embedding and the loss as one layer each (--account-for-embedding-in-
// pipeline-split, --account-for-loss-in-pipeline-split; Llama 3's layout),
// or one of them. Nothing when none divides.
std::optional<std::vector<int>> layers_of_candidate(int layers, int pp, int v) {
  if (layers % (pp * v) == 0)
    return std::vector<int>{};
  if (pp * v < 2)
    return std::nullopt;
  for (const auto& [embedding, loss] :
       {std::pair{true, true}, std::pair{false, true}, std::pair{true, false}}) {
    LayerSplitRequest request;
    request.embedding_in_split = embedding;
    request.loss_in_split = loss;
    const LayerSplit split = split_layers(request, layers, pp, v);
    if (split.problems.empty() && !split.stage_layers.empty())
      return split.stage_layers;
  }
  return light_last_stage(layers, pp, v);
}

// Expert tensor parallelism's values for a plan whose dense axes are set
// (workloads/plan_checks.cpp, check_expert_tensor_parallel): 0 (= tp, the
// key left out, so that such a candidate is the plan it was before the
// axis existed), then the divisors of tp below it, which need a MoE model,
// sequence parallelism and ZeRO 0 / 1 (the folded gradient sync).
std::vector<int> allowed_expert_tensor_parallel(const ModelSpec& model, const ParallelPlan& plan) {
  std::vector<int> out{0};
  if (!model.is_moe() || plan.tp < 2 || !plan.sequence_parallel || plan.zero_stage >= 2)
    return out;
  for (int etp : divisors(plan.tp))
    if (etp < plan.tp)
      out.push_back(etp);
  return out;
}
// A given value equal to tp is the key left out.
int expert_tensor_parallel_value(const ParallelPlan& plan, int given) {
  return given == plan.tp ? 0 : given;
}

// Expert parallelism's values for a plan whose dense axes (and expert TP)
// are set: ep divides the experts and dp x cp (the EP group is carved out
// of the data-parallel GPUs), or with expert TP below tp ep x etp divides
// tp x cp x dp (Megatron's expert rank generator over the stage), and ep >
// 1 needs ZeRO 0 / 1 and, with tp > 1, sequence parallelism
// (workloads/plan_checks.cpp, check_expert_parallel).
std::vector<int> allowed_expert_parallel(const ModelSpec& model, const ParallelPlan& plan) {
  std::vector<int> out{1};
  if (!model.is_moe() || plan.zero_stage >= 2 || (plan.tp > 1 && !plan.sequence_parallel))
    return out;
  const int positions = plan.expert_tp_folded() ? plan.tp * plan.data_parallel_size() / plan.expert_tp()
                                                : plan.data_parallel_size();
  for (int ep : divisors(positions))
    if (ep > 1 && model.moe.experts % ep == 0)
      out.push_back(ep);
  return out;
}
int expert_parallel_value(const ParallelPlan&, int given) {
  return given;
}

// The expert dimensions of the space, applied in this order (a later
// entry's rule may read an earlier one's value).
struct ExpertAxis {
  std::vector<int> PlanSpaceOptions::*given;
  int ParallelPlan::*field;
  std::vector<int> (*allowed)(const ModelSpec&, const ParallelPlan&);
  // A given value as the field holds it.
  int (*value_of)(const ParallelPlan&, int);
};
constexpr ExpertAxis kExpertAxes[] = {
    {&PlanSpaceOptions::etp, &ParallelPlan::etp, &allowed_expert_tensor_parallel,
     &expert_tensor_parallel_value},
    {&PlanSpaceOptions::ep, &ParallelPlan::ep, &allowed_expert_parallel, &expert_parallel_value},
};

// The last pipeline rank lighter than the others, which share the rest
// evenly (Megatron's --decoder-last-pipeline-num-layers): DeepSeek-V3's 61
// layers on 16 stages run 4 on each and 1 on the last, with the output
// head and the MTP module (scenarios/moe-deepseek-v3.yaml).
std::optional<std::vector<int>> light_last_stage(int layers, int pp, int v) {
  if (pp < 2)
    return std::nullopt;
  const int others = (layers - 1) / (pp - 1);  // per rank, over its v chunks
  const int last = layers - (pp - 1) * others;
  if (others < 1 || last < 1 || last >= others)
    return std::nullopt;
  LayerSplitRequest request;
  request.last_stage_layers = last;
  const LayerSplit split = split_layers(request, layers, pp, v);
  if (split.problems.empty() && !split.stage_layers.empty())
    return split.stage_layers;
  return std::nullopt;
}

}  // namespace

std::vector<ParallelPlan> expert_layouts(const ModelSpec& model, const ParallelPlan& plan,
                                         const PlanSpaceOptions& options) {
  std::vector<ParallelPlan> layouts{plan};
  for (const ExpertAxis& axis : kExpertAxes) {
    std::vector<ParallelPlan> next;
    for (const ParallelPlan& layout : layouts) {
      const std::vector<int> allowed = axis.allowed(model, layout);
      const std::vector<int>& given = options.*axis.given;
      std::vector<int> values;
      for (int v : given.empty() ? allowed : given) {
        const int value = axis.value_of(layout, v);
        if (std::find(allowed.begin(), allowed.end(), value) != allowed.end() &&
            std::find(values.begin(), values.end(), value) == values.end())
          values.push_back(value);
      }
      for (int value : values) {
        ParallelPlan with = layout;
        with.*axis.field = value;
        next.push_back(std::move(with));
      }
    }
    layouts = std::move(next);
  }
  return layouts;
}

std::string_view to_string(PruneReason reason) {
  switch (reason) {
    case PruneReason::tp_does_not_divide_heads:
      return "tp_does_not_divide_heads";
    case PruneReason::pp_does_not_divide_layers:
      return "pp_does_not_divide_layers";
    case PruneReason::batch_does_not_divide:
      return "batch_does_not_divide";
    case PruneReason::schedule_rule:
      return "schedule_rule";
    case PruneReason::invalid_plan:
      return "invalid_plan";
    case PruneReason::does_not_fit_in_memory:
      return "does_not_fit_in_memory";
  }
  return "invalid_plan";
}

std::string_view describe(PruneReason reason) {
  switch (reason) {
    case PruneReason::tp_does_not_divide_heads:
      return "tp does not divide the attention heads";
    case PruneReason::pp_does_not_divide_layers:
      return "pp x v does not divide the layers (nor with the embedding and the loss counted as layers)";
    case PruneReason::batch_does_not_divide:
      return "micro-batch x dp does not divide the global batch";
    case PruneReason::schedule_rule:
      return "the schedule's rule fails (interleaving: m a multiple of pp; DualPipe-V: m >= 2 pp)";
    case PruneReason::invalid_plan:
      return "another plan rule of the scenario loader fails";
    case PruneReason::does_not_fit_in_memory:
      return "does not fit in GPU memory (the memory model of trainsim run)";
  }
  return "";
}

PlanSpace enumerate_plans(const ModelSpec& model, const PlanSpaceOptions& options) {
  const int n = options.gpus;
  const int cp = std::max(1, options.context_parallel);
  if (n <= 0 || options.gpus_per_domain <= 0 || options.global_batch_size <= 0)
    throw std::invalid_argument(
        "enumerate_plans: gpus, gpus_per_domain and the global batch must be positive");
  if (n % cp != 0)
    throw std::invalid_argument("enumerate_plans: context parallelism does not divide the GPUs");

  std::vector<int> tp_values = options.tp;
  if (tp_values.empty())
    for (int t : divisors(options.gpus_per_domain))
      if ((n / cp) % t == 0)
        tp_values.push_back(t);
  const auto micro_batches = or_default(options.micro_batch_sizes, {1, 2, 4, 8});
  std::vector<ScheduleKind> searched;
  for (const auto& traits : schedule_table())
    if (traits.searched_by_default)
      searched.push_back(traits.kind);
  const auto schedules = or_default(options.schedules, searched);
  const auto interleave = or_default(options.virtual_stages, {2, 4, 8});
  const auto recomputes =
      or_default(options.recompute, {Recompute::none, Recompute::selective, Recompute::full});
  const auto zero_stages = or_default(options.zero_stages, {0, 1, 2, 3});
  const auto sp_values = or_default(options.sequence_parallel, {false, true});
  const auto shard_values = or_default(options.dp_shards, {options.base.dp_shard});

  PlanSpace space;
  auto prune = [&](PruneReason reason) {
    ++space.pruned[static_cast<std::size_t>(reason)];
    ++space.enumerated;
  };
  for (int tp : tp_values) {
    if ((n / cp) % tp != 0)
      continue;  // a --tp value that cannot form a plan on N GPUs: not a plan at all
    std::vector<int> pp_values = options.pp;
    if (pp_values.empty())
      pp_values = divisors(n / (tp * cp));
    for (int pp : pp_values) {
      if ((n / cp) % (tp * pp) != 0)
        continue;
      const int dp = n / (tp * pp * cp);
      for (int mb : micro_batches) {
        for (ScheduleKind schedule : schedules) {
          // With one stage every schedule is the same pipeline: keep 1f1b.
          if (pp == 1 && schedule != ScheduleKind::one_f_one_b)
            continue;
          std::vector<int> v_values{default_virtual_stages(schedule)};
          if (traits_of(schedule).chunks == ChunksPerRank::several)
            v_values = interleave;
          for (int v : v_values) {
            for (Recompute recompute : recomputes) {
              for (int zero : zero_stages) {
                for (int shard : shards_of(zero, dp * cp, shard_values))
                  for (bool sp : sp_values) {
                    if (sp && tp == 1)
                      continue;  // sequence parallelism is a TP option
                    ParallelPlan plan = options.base;
                    plan.dp_shard = shard;
                    plan.tp = tp;
                    plan.pp = pp;
                    plan.cp = cp;
                    plan.dp = dp;
                    plan.micro_batch_size = mb;
                    plan.global_batch_size = options.global_batch_size;
                    plan.schedule = schedule;
                    plan.virtual_stages = v;
                    plan.recompute = recompute;
                    plan.zero_stage = zero;
                    plan.sequence_parallel = sp;
                    // DualPipe's chunks are the pp stages held twice.
                    const auto stage_layers = layers_of_candidate(model.layers, pp, plan.model_stages() / pp);
                    if (stage_layers)
                      plan.stage_layers = *stage_layers;
                    for (const ParallelPlan& layout : expert_layouts(model, plan, options)) {
                      if (model.heads % tp != 0) {
                        prune(PruneReason::tp_does_not_divide_heads);
                      } else if (!stage_layers) {
                        prune(PruneReason::pp_does_not_divide_layers);
                      } else if (options.global_batch_size % (mb * dp) != 0) {
                        prune(PruneReason::batch_does_not_divide);
                      } else if (!schedule_problems(layout, model.layers).empty()) {
                        prune(PruneReason::schedule_rule);
                      } else {
                        space.candidates.push_back(layout);
                        ++space.enumerated;
                      }
                    }
                  }
              }
            }
          }
        }
      }
    }
  }
  return space;
}

std::string plan_key(const ParallelPlan& plan) {
  return fmt::format(
      "tp{}-pp{}-dp{}{}{}-cp{}-v{}-mb{}-{}-{}-z{}{}{}{}", plan.tp, plan.pp, plan.dp,
      plan.ep > 1 ? fmt::format("-ep{}", plan.ep) : "",
      plan.expert_tp_folded() ? fmt::format("-etp{}", plan.expert_tp()) : "", plan.cp, plan.virtual_stages,
      plan.micro_batch_size, to_string(plan.schedule), to_string(plan.recompute), plan.zero_stage,
      plan.hybrid_sharded() ? fmt::format("-s{}", plan.dp_shard) : "", plan.sequence_parallel ? "-sp" : "",
      plan.stage_layers.empty() ? "" : fmt::format("-l{}", split_text(plan.stage_layers, "_")));
}

std::string plan_label(const ParallelPlan& plan) {
  std::string text = fmt::format("tp{} pp{} dp{}", plan.tp, plan.pp, plan.dp);
  if (plan.ep > 1)
    text += fmt::format(" ep{}", plan.ep);
  if (plan.expert_tp_folded())
    text += fmt::format(" etp{}", plan.expert_tp());
  if (plan.cp > 1)
    text += fmt::format(" cp{}", plan.cp);
  text += fmt::format(" mb{} {}", plan.micro_batch_size, to_string(plan.schedule));
  if (plan.virtual_stages > 1 && traits_of(plan.schedule).chunks == ChunksPerRank::several)
    text += fmt::format(" v{}", plan.virtual_stages);
  if (plan.recompute != Recompute::none)
    text += fmt::format(" rc={}", to_string(plan.recompute));
  if (plan.zero_stage > 0)
    text += fmt::format(" zero{}", plan.zero_stage);
  if (plan.hybrid_sharded())
    text += fmt::format(" shard{}", plan.dp_shard);
  if (plan.sequence_parallel)
    text += " sp";
  if (!plan.stage_layers.empty())
    text += " layers " + split_text(plan.stage_layers, "|");
  return text;
}

std::string split_text(const std::vector<int>& stage_layers, std::string_view separator) {
  // First, second and last stage: the ends are where uneven splits differ.
  if (stage_layers.size() <= 3)
    return fmt::format("{}", fmt::join(stage_layers, separator));
  return fmt::format("{}{}{}..{}", stage_layers.front(), separator, stage_layers[1], stage_layers.back());
}

}  // namespace trainsim::workloads
