// 1F1B / PipeDream-Flush, Megatron's non-interleaved schedule
// (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_without_interleaving): rank s runs
// w = min(p - s - 1, m) warm-up forwards, then m - w pairs F(w + i), B(i),
// then the cool-down backwards B(m - w) .. B(m - 1).
#include <algorithm>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {

PipelineSchedule make_one_f_one_b(int ranks, int micro_batches, int extra_warmup) {
  PipelineSchedule schedule{
      .ranks = ranks, .micro_batches = micro_batches, .chunks = 1, .per_rank = {}, .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(ranks));
  for (int s = 0; s < ranks; ++s) {
    auto& ops = schedule.per_rank[static_cast<std::size_t>(s)];
    const int warmup = std::min(ranks - s - 1 + extra_warmup, micro_batches);
    for (int mb = 0; mb < warmup; ++mb)
      ops.push_back({PipeOpKind::forward, mb, 0});
    for (int i = 0; i < micro_batches - warmup; ++i) {
      ops.push_back({PipeOpKind::forward, warmup + i, 0});
      ops.push_back({PipeOpKind::backward, i, 0});
    }
    for (int mb = micro_batches - warmup; mb < micro_batches; ++mb)
      ops.push_back({PipeOpKind::backward, mb, 0});
  }
  return schedule;
}

ScheduleTraits one_f_one_b_traits() {
  return {.kind = ScheduleKind::one_f_one_b,
          .name = "1f1b",
          .chunks = ChunksPerRank::one,
          .placement = ChunkPlacement::looped,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::flush,
          .evicts_activations = false,
          .searched_by_default = true,
          .balances_measured_costs = false,
          .p2p = P2pMode::sync,
          .sync_p2p = true,
          .overlap_p2p = false,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions& options) {
            return make_one_f_one_b(ranks, micro_batches, options.extra_warmup);
          }};
}

}  // namespace trainsim::workloads
