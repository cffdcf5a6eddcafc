// BPipe (Kim et al., ICML 2023, "BPipe: Memory-Balanced Pipeline Parallelism
// for Training Large Language Models"): 1F1B's order, unchanged, plus
// activation transfers that balance memory inside stage pairs. Stage s < p/2
// (the evictor) is paired with stage p - 1 - s (the acceptor); in 1F1B the
// evictor holds up to min(p - s, m) micro-batches of activations and the
// acceptor min(s + 1, m), p + 1 together. BPipe caps each at about half.
//
// The rules this generator applies, walking the evictor's op list:
//  - resident limit K = ceil((p + 1) / 2) (bpipe_resident_limit);
//  - eviction: after a forward, if the resident micro-batches exceed K, the
//    activations of that forward (the one whose backward is furthest away)
//    move to the acceptor;
//  - reload (the prefetch rule): the activations of micro-batch i come back
//    as soon as the compute op two places before B(i) in the evictor's list
//    has finished (and the eviction has landed), so the transfer overlaps
//    the op just before B(i): in the steady state the reload of i starts
//    when B(i - 1) frees its memory and runs under F(w + i). B(i) waits for
//    the reload. The evictor therefore holds at most K + 1 micro-batches
//    (K plus the one coming back), the acceptor at most p + 1 - K more
//    than its own.
// The builder turns each eviction into two real pipeline transfers (evict,
// then reload) of the stage's activation bytes, on the pipeline streams of
// the pair, over NVLink when the pair shares a node, else the fabric.
#include <algorithm>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {

int bpipe_resident_limit(int ranks) {
  return (ranks + 2) / 2;
}  // ceil((p + 1) / 2)

PipelineSchedule make_bpipe(int ranks, int micro_batches) {
  PipelineSchedule schedule = make_one_f_one_b(ranks, micro_batches);
  const int limit = bpipe_resident_limit(ranks);
  for (int s = 0; s < ranks / 2; ++s) {
    const auto& ops = schedule.per_rank[static_cast<std::size_t>(s)];
    const int n = static_cast<int>(ops.size());
    std::vector<int> backward_at(static_cast<std::size_t>(micro_batches), -1);
    for (int k = 0; k < n; ++k)
      if (ops[static_cast<std::size_t>(k)].kind == PipeOpKind::backward)
        backward_at[static_cast<std::size_t>(ops[static_cast<std::size_t>(k)].micro_batch)] = k;

    // Resident count in list order: a forward adds one, a backward frees
    // one, an eviction removes one, a reload brings one back.
    std::vector<ActivationEviction> evicted;
    int resident = 0;
    for (int k = 0; k < n; ++k) {
      const PipeOp& op = ops[static_cast<std::size_t>(k)];
      if (op.kind == PipeOpKind::forward) {
        ++resident;
        if (resident > limit) {
          const int before = backward_at[static_cast<std::size_t>(op.micro_batch)];
          evicted.push_back({.rank = s,
                             .acceptor = ranks - 1 - s,
                             .micro_batch = op.micro_batch,
                             .chunk = op.chunk,
                             .evict_after = k,
                             .reload_after = std::max(before - 2, k),
                             .reload_before = before});
          --resident;
        }
      } else {
        --resident;
      }
      for (const auto& e : evicted)
        if (e.reload_after == k)
          ++resident;
    }
    schedule.evictions.insert(schedule.evictions.end(), evicted.begin(), evicted.end());
  }
  return schedule;
}

ScheduleTraits bpipe_traits() {
  return {.kind = ScheduleKind::bpipe,
          .name = "bpipe",
          .chunks = ChunksPerRank::one,
          .placement = ChunkPlacement::looped,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::flush,
          .evicts_activations = true,
          .searched_by_default = true,
          .balances_measured_costs = false,
          .p2p = P2pMode::sync,
          .sync_p2p = true,
          .overlap_p2p = false,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions&) {
            return make_bpipe(ranks, micro_batches);
          }};
}

}  // namespace trainsim::workloads
