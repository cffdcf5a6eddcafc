// Interleaved 1F1B, Megatron-LM's virtual pipeline (Narayanan et al., SC21),
// ported from megatron/core/pipeline_parallel/schedules.py:
// forward_backward_pipelining_with_interleaving, get_schedule_table and
// get_pp_rank_microbatches.
//
// Rank r holds v model chunks (virtual stages r, r + p, ...). Its m x v
// "virtual micro-batches" k follow a schedule table that runs a group of g
// micro-batches (microbatch_group_size_per_vp_stage, default p) through
// chunk 0, then the same group through chunk 1, ..., then the next group:
//   warm-up   F(k) for k < w, w = min(2 (p - r - 1) + (v - 1) g, m v)
//   steady    F(k + w), B(k) for k < m v - w
//   cool-down B(k) for the rest.
// F(k) runs table[k] = (micro-batch, chunk); B(k) the same micro-batch on
// chunk v - 1 - chunk (backwards walk the chunks in reverse), which is also
// the order Megatron pops its per-chunk FIFO of saved activations.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

struct TableEntry {
  int micro_batch;
  int chunk;
};

// get_schedule_table: groups of g micro-batches, each group through every
// chunk before the next group; the last group takes what is left.
std::vector<TableEntry> schedule_table(int micro_batches, int chunks, int group) {
  std::vector<TableEntry> table;
  for (int first = 0; first < micro_batches; first += group) {
    const int end = first + group >= micro_batches ? micro_batches : first + group;
    for (int chunk = 0; chunk < chunks; ++chunk)
      for (int mb = first; mb < end; ++mb)
        table.push_back({mb, chunk});
  }
  return table;
}

}  // namespace

PipelineSchedule make_interleaved_one_f_one_b(int ranks, int micro_batches, int virtual_stages,
                                              int microbatch_group, int extra_warmup) {
  const int p = ranks, m = micro_batches, v = virtual_stages;
  const int g = microbatch_group > 0 ? microbatch_group : p;
  if (p < 1 || m < 1)
    throw std::invalid_argument("interleaved 1F1B needs at least one rank and one micro-batch");
  if (v < 2)
    throw std::invalid_argument("interleaved 1F1B needs at least 2 model chunks per rank, got " +
                                std::to_string(v));
  // The checks of forward_backward_pipelining_with_interleaving.
  if (g > m || g < p)
    throw std::invalid_argument("interleaved 1F1B: the micro-batch group (" + std::to_string(g) +
                                ") must lie in [pp, m] = [" + std::to_string(p) + ", " + std::to_string(m) +
                                "]");
  if (const int last = m % g; last > 0 && last < p)
    throw std::invalid_argument("interleaved 1F1B: m = " + std::to_string(m) + " leaves a last group of " +
                                std::to_string(last) + " < pp = " + std::to_string(p) +
                                " micro-batches (a multiple of the group size is expected)");

  PipelineSchedule schedule{.ranks = p, .micro_batches = m, .chunks = v, .per_rank = {}, .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(p));
  const auto table = schedule_table(m, v, g);
  const int total = m * v;
  auto forward = [&](int k) {
    const auto& e = table[static_cast<std::size_t>(k)];
    return PipeOp{PipeOpKind::forward, e.micro_batch, e.chunk};
  };
  auto backward = [&](int k) {
    const auto& e = table[static_cast<std::size_t>(k)];
    return PipeOp{PipeOpKind::backward, e.micro_batch, v - 1 - e.chunk};
  };
  for (int r = 0; r < p; ++r) {
    auto& ops = schedule.per_rank[static_cast<std::size_t>(r)];
    const int warmup = std::min(2 * (p - r - 1) + (v - 1) * g + extra_warmup, total);
    for (int k = 0; k < warmup; ++k)
      ops.push_back(forward(k));
    for (int k = 0; k < total - warmup; ++k) {
      ops.push_back(forward(k + warmup));
      ops.push_back(backward(k));
    }
    for (int k = total - warmup; k < total; ++k)
      ops.push_back(backward(k));
  }
  return schedule;
}

ScheduleTraits interleaved_one_f_one_b_traits() {
  return {.kind = ScheduleKind::interleaved_one_f_one_b,
          .name = "interleaved_1f1b",
          .chunks = ChunksPerRank::several,
          .placement = ChunkPlacement::looped,
          .micro_batches_in_groups_of_pp = true,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::interleaved,
          .evicts_activations = false,
          .searched_by_default = true,
          .balances_measured_costs = false,
          .p2p = P2pMode::overlap,
          .sync_p2p = false,
          .overlap_p2p = true,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions& options) {
            return make_interleaved_one_f_one_b(ranks, micro_batches, options.virtual_stages,
                                                options.microbatch_group, options.extra_warmup);
          }};
}

}  // namespace trainsim::workloads
