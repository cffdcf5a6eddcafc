#pragma once
// How one training iteration is split over GPUs (Megatron vocabulary).
#include <string>
#include <string_view>

namespace trainsim::workloads {

// Pipeline schedules (workloads/schedules/, one generator per file). The
// scenario word of each is to_string(kind).
enum class ScheduleKind {
  gpipe,                    // "gpipe"
  one_f_one_b,              // "1f1b"
  interleaved_one_f_one_b,  // "interleaved_1f1b" (Megatron virtual pipeline)
  zb_h1,                    // "zb_h1" (zero bubble, 1F1B memory)
  zb_h2,                    // "zb_h2" (zero bubble, 2p - 1 micro-batches in flight)
  zb_v,                     // "zb_v" (zero bubble, V-shape, two chunks per rank)
  bpipe,                    // "bpipe" (1F1B plus activation eviction to the paired stage)
  dualpipe_v,               // "dualpipe_v" (DeepSeek, bidirectional V-shape)
};
std::string_view to_string(ScheduleKind kind);

enum class Recompute { none, selective, full };
std::string_view to_string(Recompute recompute);

struct ParallelPlan {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int micro_batch_size = 1;
  int global_batch_size = 1;
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  // Model chunks per GPU (v): interleaved_1f1b's virtual stages, 2 for the
  // V-shaped schedules (zb_v, dualpipe_v), 1 otherwise. The pipeline has
  // pp x v virtual stages of layers / (pp x v) layers each.
  int virtual_stages = 1;
  Recompute recompute = Recompute::none;
  // Bytes per gradient element in the DP all-reduce (2 for bf16/fp16).
  int grad_bytes = 2;

  int gpu_count() const { return dp * tp * pp; }
  // m: micro-batches each pipeline runs per iteration.
  int micro_batches() const { return global_batch_size / (micro_batch_size * dp); }

  // Megatron's rank order (tp fastest, then dp, then pp): TP groups sit inside
  // a node, pipeline stages are farthest apart.
  int gpu_of(int pp_rank, int dp_rank, int tp_rank) const { return tp_rank + tp * (dp_rank + dp * pp_rank); }
  int pp_rank_of(int gpu) const { return gpu / (tp * dp); }
  int dp_rank_of(int gpu) const { return (gpu / tp) % dp; }
  int tp_rank_of(int gpu) const { return gpu % tp; }
};

}  // namespace trainsim::workloads
