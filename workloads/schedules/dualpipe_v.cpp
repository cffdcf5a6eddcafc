// DualPipe-V (DeepSeek-V3 technical report; deepseek-ai/DualPipe,
// dualpipe/dualpipev.py, DualPipeV.step; the same eight steps as PyTorch's
// ScheduleDualPipeV): the bidirectional DualPipe folded into a V, so p ranks
// run 2p virtual stages, rank r holding stage r (phase 0, chunk 0) and stage
// 2p - 1 - r (phase 1, chunk 1). Ported step by step, for rank r:
//   1 nF0       2 (p - r - 1) forwards of chunk 0
//   2 nF0F1     r + 1 times F0, F1
//   3 nB1W1F1   p - r - 1 times I1 (zero bubble), W, F1
//   4 main      m - 2p + r + 1 times F0&B1, F1&B0 (the first F0&B1 of the
//               last rank not overlapped: F0 then B1)
//   5 nB1F1B0   p - r - 1 times B1, F1&B0
//   6 nB1B0     r + 1 times B1, B0; from the middle pair on (index
//               (r + 1) / 2, at B1 for odd r, at B0 for even r) the
//               backwards split off their W (I instead of B)
//   7 nWB0      p - r - 1 times W, I0
//   8 nW        r + 1 times W
// Micro-batch ids count up per chunk and kind; W pops the oldest pending
// weight gradient (WeightGradStore is a FIFO); dualpipe_op_list.hpp, shared
// with DualPipe (dualpipe.cpp), keeps that bookkeeping. An overlapped pair
// "F&B" runs here as F then B on the compute stream: DualPipe overlaps the
// pair's communication (expert all-to-all) with the other's computation
// (plan.moe_a2a_overlap), and the builder already overlaps pipeline
// transfers with compute.
// Needs m >= 2p (the reference asserts it).
#include <stdexcept>
#include <string>

#include "workloads/schedule.hpp"
#include "workloads/schedules/dualpipe_op_list.hpp"

namespace trainsim::workloads {

PipelineSchedule make_dualpipe_v(int ranks, int micro_batches) {
  const int p = ranks, m = micro_batches;
  if (p < 1 || m < 2 * p)
    throw std::invalid_argument("DualPipe-V needs at least 2 x ranks micro-batches (m = " +
                                std::to_string(m) + ", ranks = " + std::to_string(p) + ")");
  PipelineSchedule schedule{.ranks = p,
                            .micro_batches = m,
                            .chunks = 2,
                            .placement = ChunkPlacement::v_shape,
                            .per_rank = {},
                            .evictions = {}};
  schedule.per_rank.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& ops = schedule.per_rank[static_cast<std::size_t>(r)];
    detail::DualPipeOpList list(ops, "DualPipe-V");
    for (int i = 0; i < 2 * (p - r - 1); ++i)  // step 1
      list.forward(0);
    for (int i = 0; i < r + 1; ++i) {  // step 2
      list.forward(0);
      list.forward(1);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // step 3
      list.backward(1, true);
      list.weight();
      list.forward(1);
    }
    for (int i = 0; i < m - 2 * p + r + 1; ++i) {  // step 4
      if (i == 0 && r == p - 1) {                  // "not overlapped to further reduce bubble size"
        list.forward(0);
        list.backward(1);
      } else {
        list.forward_backward(0, 1);
      }
      list.forward_backward(1, 0);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // step 5
      list.backward(1);
      list.forward_backward(1, 0);
    }
    const int step_6 = r + 1;  // step 6
    bool zero_bubble = false;
    for (int i = 0; i < step_6; ++i) {
      if (i == step_6 / 2 && r % 2 == 1)
        zero_bubble = true;
      list.backward(1, zero_bubble);
      if (i == step_6 / 2 && r % 2 == 0)
        zero_bubble = true;
      list.backward(0, zero_bubble);
    }
    for (int i = 0; i < p - r - 1; ++i) {  // step 7
      list.weight();
      list.backward(0, true);
    }
    for (int i = 0; i < r + 1; ++i)  // step 8
      list.weight();
    list.finish();
  }
  return schedule;
}

ScheduleTraits dualpipe_v_traits() {
  return {.kind = ScheduleKind::dualpipe_v,
          .name = "dualpipe_v",
          .chunks = ChunksPerRank::two,
          .placement = ChunkPlacement::v_shape,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 2,
          .bubble = BubbleModel::zero_bubble_h2,
          .evicts_activations = false,
          .searched_by_default = false,
          .balances_measured_costs = false,
          .p2p = P2pMode::async,
          .sync_p2p = false,
          .overlap_p2p = false,
          .marks_pairs = true,
          .make = [](int ranks, int micro_batches, const ScheduleOptions&) {
            return make_dualpipe_v(ranks, micro_batches);
          }};
}

}  // namespace trainsim::workloads
