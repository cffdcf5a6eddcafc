// DualPipe (DeepSeek-V3 technical report, section 3.2.1; deepseek-ai/DualPipe,
// dualpipe/dualpipe.py, DualPipe.step): two pipelines of the whole model
// run in opposite directions on the same p ranks (p even). Rank r holds
// stage r of the "down" pipeline (chunk 0: fed at rank 0, loss on rank
// p - 1) and stage p - 1 - r of the "up" pipeline (chunk 1: fed at rank
// p - 1, loss on rank 0), so every stage's parameters are held twice: by
// rank s and by rank p - 1 - s ("DualPipe requires keeping two copies of
// the model parameters"), whose gradients are summed before the optimizer
// step (workloads/graph_builder/dualpipe_copy_sync.cpp). The m micro-batches
// split into two halves, m / 2 fed from each end (the reference scatters
// each end's inputs into half_num_chunks).
//
// The reference's "phase" is the direction seen from the rank: phase 0 is
// the down direction on the first half of the ranks and the up direction on
// the second half (phase ^= is_in_second_half), so chunk = phase ^ (r >=
// p/2). With h = min(r, p - 1 - r) (half_rank) and the middle ranks p/2 - 1
// and p/2, rank r runs the eight steps:
//   1 nF0       2 (p/2 - h - 1) forwards of phase 0
//   2 nF0F1     h + 1 times F0, F1
//   3 nB1W1F1   p/2 - h - 1 times I1 (zero bubble), W, F1
//   4 main      m/2 - p + h + 1 times F0&B1, F1&B0 (the first F0&B1 of the
//               middle ranks not overlapped: F0 then B1)
//   5 nB1F1B0   p/2 - h - 1 times B1, F1&B0
//   6 nB1B0     h + 1 times B1, B0; from the middle pair on (index
//               (h + 1) / 2, at B1 for odd h, at B0 for even h) the
//               backwards split off their W (I instead of B)
//   7 nWB0      p/2 - h - 1 times W, I0
//   8 nW        h + 1 times W
// The per-chunk micro-batch ids, the weight-gradient FIFO and the F&B pairs
// are dualpipe_op_list.hpp's, shared with DualPipe-V (dualpipe_v.cpp).
// Needs p even and m even with m >= 2p (the reference asserts
// num_ranks % 2 == 0, num_chunks % 2 == 0 and num_chunks >= num_ranks * 2).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "workloads/schedule.hpp"
#include "workloads/schedules/dualpipe_op_list.hpp"

namespace trainsim::workloads {

PipelineSchedule make_dualpipe(int ranks, int micro_batches) {
  const int p = ranks, m = micro_batches;
  if (p < 2 || p % 2 != 0 || m % 2 != 0 || m < 2 * p)
    throw std::invalid_argument(
        "DualPipe needs an even number of ranks and an even number of micro-batches, at least 2 x ranks "
        "(m = " +
        std::to_string(m) + ", ranks = " + std::to_string(p) + ")");
  PipelineSchedule schedule{.ranks = p,
                            .micro_batches = m,
                            .chunks = 2,
                            .placement = ChunkPlacement::bidirectional,
                            .per_rank = {},
                            .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(p));
  const int half_ranks = p / 2, half_m = m / 2;
  for (int r = 0; r < p; ++r) {
    detail::DualPipeOpList list(schedule.per_rank[static_cast<std::size_t>(r)], "DualPipe");
    const int second_half = r >= half_ranks ? 1 : 0;
    const int h = std::min(r, p - 1 - r);
    const bool middle = r == half_ranks - 1 || r == half_ranks;
    // The reference's phases, as this rank's chunks.
    const int c0 = 0 ^ second_half, c1 = 1 ^ second_half;

    for (int i = 0; i < 2 * (half_ranks - h - 1); ++i)  // step 1
      list.forward(c0);
    for (int i = 0; i < h + 1; ++i) {  // step 2
      list.forward(c0);
      list.forward(c1);
    }
    for (int i = 0; i < half_ranks - h - 1; ++i) {  // step 3
      list.backward(c1, true);
      list.weight();
      list.forward(c1);
    }
    for (int i = 0; i < half_m - p + h + 1; ++i) {  // step 4
      if (i == 0 && middle) {                       // "we don't overlap these two chunks"
        list.forward(c0);
        list.backward(c1);
      } else {
        list.forward_backward(c0, c1);
      }
      list.forward_backward(c1, c0);
    }
    for (int i = 0; i < half_ranks - h - 1; ++i) {  // step 5
      list.backward(c1);
      list.forward_backward(c1, c0);
    }
    const int step_6 = h + 1;  // step 6
    bool zero_bubble = false;
    for (int i = 0; i < step_6; ++i) {
      if (i == step_6 / 2 && h % 2 == 1)
        zero_bubble = true;
      list.backward(c1, zero_bubble);
      if (i == step_6 / 2 && h % 2 == 0)
        zero_bubble = true;
      list.backward(c0, zero_bubble);
    }
    for (int i = 0; i < half_ranks - h - 1; ++i) {  // step 7
      list.weight();
      list.backward(c0, true);
    }
    for (int i = 0; i < h + 1; ++i)  // step 8
      list.weight();
    list.finish();
  }
  return schedule;
}

ScheduleTraits dualpipe_traits() {
  return {.kind = ScheduleKind::dualpipe,
          .name = "dualpipe",
          .chunks = ChunksPerRank::two,
          .placement = ChunkPlacement::bidirectional,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 2,
          .bubble = BubbleModel::dualpipe,
          .evicts_activations = false,
          .searched_by_default = false,
          .balances_measured_costs = false,
          .p2p = P2pMode::async,
          .sync_p2p = false,
          .overlap_p2p = false,
          .marks_pairs = true,
          .make = [](int ranks, int micro_batches, const ScheduleOptions&) {
            return make_dualpipe(ranks, micro_batches);
          }};
}

}  // namespace trainsim::workloads
