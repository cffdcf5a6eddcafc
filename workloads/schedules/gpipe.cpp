// GPipe (Huang et al. 2019): all forwards, then all backwards in reverse.
// Stage s: F0 .. F(m-1), B(m-1) .. B0.
#include "workloads/schedule.hpp"

namespace trainsim::workloads {

PipelineSchedule make_gpipe(int ranks, int micro_batches) {
  PipelineSchedule schedule{
      .ranks = ranks, .micro_batches = micro_batches, .chunks = 1, .per_rank = {}, .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(ranks));
  for (auto& ops : schedule.per_rank) {
    for (int mb = 0; mb < micro_batches; ++mb)
      ops.push_back({PipeOpKind::forward, mb, 0});
    for (int mb = micro_batches - 1; mb >= 0; --mb)
      ops.push_back({PipeOpKind::backward, mb, 0});
  }
  return schedule;
}

ScheduleTraits gpipe_traits() {
  return {.kind = ScheduleKind::gpipe,
          .name = "gpipe",
          .chunks = ChunksPerRank::one,
          .placement = ChunkPlacement::looped,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::flush,
          .evicts_activations = false,
          .searched_by_default = false,
          .balances_measured_costs = false,
          .p2p = P2pMode::async,
          .sync_p2p = true,
          .overlap_p2p = false,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions&) {
            return make_gpipe(ranks, micro_batches);
          }};
}

}  // namespace trainsim::workloads
