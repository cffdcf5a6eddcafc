// ZB-H1 (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism"): 1F1B's
// memory, the backward split into B (input gradient, I here) and W (weight
// gradient), the W of the first micro-batches deferred to fill the
// cool-down bubble. Ported from the authors' DeepSpeed schedule
// ZeroBubbleH1Pipeline.steps() (sail-sg, with enable_zbh1_exact_semantics):
// stage s runs
//   F section    min(p - s - 1, m) forwards
//   FB section   s pairs F, I (their W deferred)
//   FBW section  F, I, W while forwards remain
//   BW section   I, W while backwards remain
//   W section    the deferred W.
// W pops the oldest pending weight gradient (a FIFO). Stage 0 runs full
// backwards (B): nothing upstream waits for its input gradient, so it never
// splits; its order is exactly 1F1B's.
// Bubble with uniform stages: (p - 1)(T_F + T_B - T_W), a third of 1F1B's
// when T_F = T_B = T_W.
#include <stdexcept>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {

PipelineSchedule make_zb_h1(int ranks, int micro_batches) {
  const int p = ranks, m = micro_batches;
  if (p < 1 || m < 1)
    throw std::invalid_argument("ZB-H1 needs at least one rank and one micro-batch");
  PipelineSchedule schedule{.ranks = p, .micro_batches = m, .chunks = 1, .per_rank = {}, .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    auto& ops = schedule.per_rank[static_cast<std::size_t>(s)];
    const bool first = s == 0;
    int forward = 0, backward = 0, weight = 0;
    auto f = [&] { ops.push_back({PipeOpKind::forward, forward++, 0}); };
    // Stage 0's full backward also counts as its weight pass.
    auto b_full = [&] {
      ops.push_back({PipeOpKind::backward, backward++, 0});
      ++weight;
    };
    auto b_input = [&] { ops.push_back({PipeOpKind::backward_input, backward++, 0}); };
    auto w = [&] { ops.push_back({PipeOpKind::backward_weight, weight++, 0}); };

    const int warmup = p - s;  // num_warmup_microbatches in the reference
    for (int i = 0; i < warmup - 1; ++i)
      if (forward < m)
        f();
    for (int i = 0; i < s; ++i)
      if (forward < m) {
        f();
        b_input();  // stage s > 0 here: stage 0 has no FB section
      }
    while (forward < m) {
      f();
      if (first) {
        b_full();
      } else {
        b_input();
        w();
      }
    }
    while (backward < m) {
      if (first) {
        b_full();
      } else {
        b_input();
        w();
      }
    }
    while (weight < m)
      w();
  }
  return schedule;
}

ScheduleTraits zb_h1_traits() {
  return {.kind = ScheduleKind::zb_h1,
          .name = "zb_h1",
          .chunks = ChunksPerRank::one,
          .placement = ChunkPlacement::looped,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::zero_bubble_h1,
          .evicts_activations = false,
          .searched_by_default = true,
          .balances_measured_costs = false,
          .p2p = P2pMode::async,
          .sync_p2p = true,
          .overlap_p2p = false,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions&) {
            return make_zb_h1(ranks, micro_batches);
          }};
}

}  // namespace trainsim::workloads
