// The distributed optimizer's overlapped parameter all-gather
// (plan.overlap_param_gather; Megatron-LM --overlap-param-gather, ZeRO-1 /
// ZeRO-2). Without it, every member all-gathers its updated parameter shard
// in one collective after the optimizer step (data_parallel_sync.cpp). With
// it, Megatron-core (core_r0.8.0, optimizer/distrib_optimizer.py) gathers
// bucket by bucket, in the order the next forward uses them:
//
//   - the first bucket's gather is launched at zero_grad, before the
//     forward starts;
//   - the forward pre-hook of a module waits for its bucket's gather and
//     only then launches the next bucket's ("we can't pre-launch all-gathers
//     for all buckets at once since we don't want to head-of-line block the
//     compute kernels", CUDA_DEVICE_MAX_CONNECTIONS=1).
//
// So bucket b + 1 moves while the forward computes bucket b, and the first
// forward of a layer waits for its bucket. The buckets are the gradient
// buckets (grad_bucket_size, in parameters), walked in forward order: each
// chunk's first forward, layer by layer (the embedding with the first
// layer, the output layer with the last), the chunks in the order the GPU
// first runs them. A chunk's first bucket is launched as soon as the
// previous chunk's last bucket has moved (Megatron's interleaved schedule
// launches the next chunk's gather ahead of its first forward too).
//
// One iteration of the steady state: the gathers of iteration i + 1 follow
// the optimizer step of iteration i, so placing them at the start of the
// simulated iteration (after nothing) and ending it at the step gives the
// same period. Volume unchanged: param_gather_bytes_per_parameter per
// parameter, as the serial gather. No memory event: ZeRO-1 / ZeRO-2 keep
// every bf16 parameter resident.
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"

namespace trainsim::workloads::detail {

void IterationBuilder::add_overlapped_param_gathers(int rank, const std::vector<int>& members, int group) {
  const double bucket_parameters = plan_.grad_bucket_size_bytes() / plan_.grad_bytes;
  // The chunks in the order this rank first runs their forward (replica 0's
  // list; every replica's first forwards are the same ops, only later
  // micro-batches differ under plan.dp_micro_batches).
  const auto& list = schedule(0).per_rank[static_cast<std::size_t>(rank)];
  std::vector<int> chunks;
  for (std::size_t k = 0; k < list.size(); ++k)
    if (list[k].kind == PipeOpKind::forward && first_forward_op(0, rank, list[k].chunk) == k)
      chunks.push_back(list[k].chunk);

  // A bucket: its pieces (op index per member, piece index) and bytes.
  struct Bucket {
    std::vector<std::pair<int, std::size_t>> pieces;  // (chunk, piece)
    double bytes = 0;
  };
  std::vector<Bucket> buckets;
  for (int chunk : chunks) {
    const std::size_t k = first_forward_op(0, rank, chunk);
    const auto& pieces = ops_[idx(members.front())][k].pieces;
    Bucket bucket;
    double in_bucket = 0;
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      bucket.pieces.emplace_back(chunk, p);
      bucket.bytes += gather_wire_bytes(pieces[p]);
      in_bucket += pieces[p].parameters;
      if (in_bucket >= bucket_parameters || p + 1 == pieces.size()) {
        buckets.push_back(std::move(bucket));
        bucket = {};
        in_bucket = 0;
      }
    }
  }
  auto piece_of = [&](int gpu, int chunk, std::size_t p) -> const Piece& {
    return ops_[idx(gpu)][first_forward_op(plan_.dp_rank_of(gpu), rank, chunk)].pieces[p];
  };
  TaskId previous = kNone;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto [chunk, first_piece] = buckets[b].pieces.front();
    const TaskId id = graph_.add(collective_task(
        CommKind::dp, CollectiveOp::all_gather, group, rank, buckets[b].bytes,
        {.chunk = chunk, .micro_batch = 0, .layer = piece_of(members.front(), chunk, first_piece).layer}));
    if (previous != kNone)
      graph_.depend(previous, id);
    // Launched when the forward reaches the bucket before it: that bucket's
    // first piece may start, i.e. whatever precedes it in its op has ended.
    if (b > 0) {
      const auto [prev_chunk, prev_piece] = buckets[b - 1].pieces.front();
      if (prev_chunk == chunk && prev_piece > 0)
        for (int gpu : members)
          graph_.depend(piece_of(gpu, prev_chunk, prev_piece - 1).last, id);
    }
    for (const auto& [c, p] : buckets[b].pieces)
      for (int gpu : members) {
        const Piece& piece = piece_of(gpu, c, p);
        graph_.depend(id, piece.first);
        if (piece.exchange != kNone)
          graph_.depend(id, piece.exchange);
      }
    previous = id;
  }
}

}  // namespace trainsim::workloads::detail
