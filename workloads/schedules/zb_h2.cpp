// ZB-H2 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism", the
// handcrafted schedule of its Figure 4): B split into I (input gradient) and
// W (weight gradient); more warm-up forwards than 1F1B fill the bubble
// before the first backward, and the W of the cool-down are pushed to the
// end so the iteration becomes a parallelogram. Stage s runs
//   warm-up    w = min(2 (p - s) - 1, m) forwards
//   steady     I(i), F(w + i) while forwards remain
//   cool-down  I, W for every remaining backward but the last, then the
//              last I, then every remaining W.
// W pops the oldest pending weight gradient (a FIFO, as the reference's
// WeightGradStore). For p = 4, m = 12 this is, op by op, the schedule drawn
// in the comment of zb.py's Graph.manual_order (sail-sg/
// zero-bubble-pipeline-parallelism), which ../shared/reference/schedules.md
// quotes. Memory: up to 2p - 1 micro-batches in flight on stage 0.
// With T_F = T_B = T_W every stage is busy without a gap from its first op to
// its last: the only idle time of one isolated iteration is the ramp,
// (p - 1) T_F per stage, which the paper hides by overlapping the next
// iteration (optimizer post-validation).
#include <algorithm>
#include <stdexcept>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {

PipelineSchedule make_zb_h2(int ranks, int micro_batches) {
  const int p = ranks, m = micro_batches;
  if (p < 1 || m < 1)
    throw std::invalid_argument("ZB-H2 needs at least one rank and one micro-batch");
  PipelineSchedule schedule{.ranks = p, .micro_batches = m, .chunks = 1, .per_rank = {}, .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    auto& ops = schedule.per_rank[static_cast<std::size_t>(s)];
    int forward = 0, backward = 0, weight = 0;
    auto f = [&] { ops.push_back({PipeOpKind::forward, forward++, 0}); };
    auto b = [&] { ops.push_back({PipeOpKind::backward_input, backward++, 0}); };
    auto w = [&] { ops.push_back({PipeOpKind::backward_weight, weight++, 0}); };
    const int warmup = std::min(2 * (p - s) - 1, m);
    for (int i = 0; i < warmup; ++i)
      f();
    while (forward < m) {
      b();
      f();
    }
    while (backward < m - 1) {
      b();
      w();
    }
    b();
    while (weight < m)
      w();
  }
  return schedule;
}

ScheduleTraits zb_h2_traits() {
  return {.kind = ScheduleKind::zb_h2,
          .name = "zb_h2",
          .chunks = ChunksPerRank::one,
          .placement = ChunkPlacement::looped,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::zero_bubble_h2,
          .evicts_activations = false,
          .searched_by_default = false,
          .balances_measured_costs = false,
          .p2p = P2pMode::async,
          .sync_p2p = true,
          .overlap_p2p = false,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions&) {
            return make_zb_h2(ranks, micro_batches);
          }};
}

}  // namespace trainsim::workloads
