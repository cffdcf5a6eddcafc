#pragma once
// The parallel plans a plan search (`trainsim plan`) considers for one model
// on N GPUs at one global batch, and the arithmetic rules that prune them
// before anything costs time: the space is the product of
//
//   tp                 divisors of the GPUs per NVLink domain that divide N (TP stays on NVLink)
//   pp                 divisors of N / (tp x cp)
//   micro-batch size   1, 2, 4, 8
//   schedule           1f1b, interleaved_1f1b (v = 2, 4, 8), zb_h1, bpipe (by default;
//                      any schedule on request); pp = 1 runs 1f1b only, since every
//                      schedule is the same single stage there
//   recompute          none, selective, full (selective_op on request)
//   ZeRO stage         0, 1, 2, 3
//   sequence parallel  false, and true when tp > 1
//   expert TP          MoE models only: tp (the key left out) and the
//                      divisors of tp below it, with sequence parallelism
//                      and ZeRO 0 / 1 (tp alone otherwise; between 1 and tp
//                      not with moe_dispatcher deepep)
//   expert parallel    MoE models only: the divisors of dp x cp that divide
//                      the routed experts, or with expert TP below tp those
//                      of tp x cp x dp / etp (1 alone for ZeRO 2 / 3, and
//                      for tp > 1 without sequence parallelism, which the
//                      loader refuses with ep > 1)
//
// with dp = N / (tp x pp x cp) and cp fixed by the caller. The expert
// dimensions are a table in plan_space.cpp (kExpertAxes): each names its
// ParallelPlan field, its PlanSpaceOptions values and the values the
// loader's rules allow a plan; another dimension is one more entry. Each plan of the
// product is either a candidate or pruned for the first rule it breaks, in
// the order of PruneReason; the memory check and the loader's other rules
// come later (sim/study/plan_search.hpp) and add their own counts.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

enum class PruneReason : unsigned char {
  tp_does_not_divide_heads,   // model.heads % tp != 0
  pp_does_not_divide_layers,  // model.layers % pp != 0
  batch_does_not_divide,      // global batch % (micro-batch x dp) != 0
  schedule_rule,              // schedule_problems(): interleaving's m % pp, layers % (pp x v)
  invalid_plan,               // another rule of the scenario loader
  does_not_fit_in_memory,     // the memory model's peak exceeds a GPU's HBM
};
inline constexpr std::size_t kPruneReasonCount = 6;
// "tp_does_not_divide_heads", ...: the words written in plans.json.
std::string_view to_string(PruneReason reason);
// "tp does not divide the heads", ...: for the terminal.
std::string_view describe(PruneReason reason);

struct PlanSpaceOptions {
  int gpus = 0;
  // GPUs per NVLink domain: tp is searched among its divisors, so that a TP
  // group stays on NVLink (a node, or a GB200 NVL72 rack's 72 GPUs).
  int gpus_per_domain = 0;
  int global_batch_size = 0;
  int context_parallel = 1;
  // Empty: the defaults above. A single value fixes that axis.
  std::vector<int> tp;
  std::vector<int> pp;
  std::vector<int> micro_batch_sizes;
  std::vector<ScheduleKind> schedules;
  std::vector<int> virtual_stages;  // interleaved_1f1b's v; default 2, 4, 8
  std::vector<Recompute> recompute;
  std::vector<int> zero_stages;
  // Hybrid sharding (plan.dp_shard) of the zero_stage 3 candidates, 0 for
  // full sharding; empty: the base plan's. A value that does not divide a
  // candidate's dp x cp is skipped for it, one that reaches dp x cp is full
  // sharding. Candidates of other ZeRO stages never shard hybridly.
  std::vector<int> dp_shards;
  std::vector<bool> sequence_parallel;
  // plan.expert_parallel values; empty: every value the loader allows (a
  // dense model: 1). A value a plan cannot take is skipped for that plan.
  std::vector<int> ep;
  // plan.expert_tensor_parallel values (tp's own value is the key left
  // out); empty: every value the loader allows.
  std::vector<int> etp;
  // The base plan's other settings (gradient dtype, bucketing), copied into
  // every candidate.
  ParallelPlan base;
};

struct PlanSpace {
  std::vector<ParallelPlan> candidates;  // in enumeration order
  std::array<std::size_t, kPruneReasonCount> pruned{};
  std::size_t enumerated = 0;  // candidates + every pruned plan
};

// Throws std::invalid_argument when gpus, gpus_per_domain or the batch is not
// positive (the CLI checks them first, with messages).
PlanSpace enumerate_plans(const ModelSpec& model, const PlanSpaceOptions& options);

// A plan's identity, e.g. "tp2-pp4-dp8-cp1-v1-mb2-1f1b-selective-z1-sp"
// ("-ep8" after dp under expert parallelism, "-etp1" after it with expert TP below tp, "-s8" after z3 under
// hybrid sharding, "-l0_2..1" with an uneven split): the key ties in the ranking are broken by, the name of
// its folder.
std::string plan_key(const ParallelPlan& plan);
// Human text: "tp2 pp4 dp8 mb2 1f1b rc=selective zero1 sp" ("dp8 ep4" under
// expert parallelism, "ep4 etp1" with expert TP below tp, "zero3 shard8" under hybrid sharding; defaults left
// out: cp 1, v 1, recompute none, zero 0, no sp).
std::string plan_label(const ParallelPlan& plan);
// An uneven partition (a candidate whose layers pp x v does not divide runs
// Megatron's split counting the embedding and the loss as layers) in a key
// ("-l0_2..1") or a label ("layers 0|2..|1"): the first, second and last
// virtual stages' layers.
// The expert layouts of `plan` (its dense axes set) the search takes: the
// product of the expert dimensions' values, each filtered by the loader's
// rules. A dense model: `plan` alone.
std::vector<ParallelPlan> expert_layouts(const ModelSpec& model, const ParallelPlan& plan,
                                         const PlanSpaceOptions& options);

std::string split_text(const std::vector<int>& stage_layers, std::string_view separator);

}  // namespace trainsim::workloads
