#pragma once
// A pipeline schedule as per-rank ordered op lists: the contract between the
// schedule generators (workloads/schedules/*.cpp) and the task-graph builder.
//
// Dependencies implied by a schedule (the builder adds them, plus transfers):
//  - F(mb, vs) after F(mb, vs - 1): the activation of virtual stage vs - 1;
//  - B(mb, vs) after B(mb, vs + 1): the gradient from virtual stage vs + 1;
//    the last virtual stage's B(mb) follows its own F(mb);
//  - W(mb, vs) after B(mb, vs) (weight gradient after input gradient);
//  - on one rank, its own list order.
// A virtual stage is one contiguous slice of the model's layers; with one
// chunk per rank the virtual stage is the rank.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

enum class PipeOpKind : std::uint8_t {
  forward,
  backward,         // full backward (input and weight gradients)
  backward_input,   // zero-bubble B: input gradient only
  backward_weight,  // zero-bubble W: weight gradient only
};

struct PipeOp {
  PipeOpKind kind = PipeOpKind::forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank (0 without virtual stages)

  friend bool operator==(const PipeOp&, const PipeOp&) = default;
};

// Where the chunks of a rank sit in the model.
enum class ChunkPlacement {
  looped,  // rank r holds virtual stages r, r + p, r + 2p, ... (Megatron interleaving)
  v_shape  // rank r holds virtual stages r and 2p - 1 - r (ZB-V, DualPipe-V)
};

struct PipelineSchedule {
  int ranks = 1;
  int micro_batches = 1;
  int chunks = 1;
  ChunkPlacement placement = ChunkPlacement::looped;
  std::vector<std::vector<PipeOp>> per_rank;

  int virtual_stages() const { return ranks * chunks; }
  int virtual_stage(int rank, int chunk) const {
    if (placement == ChunkPlacement::v_shape && chunk % 2 == 1)
      return (chunk + 1) * ranks - 1 - rank;
    return chunk * ranks + rank;
  }
};

// Compact text of one rank's list, for tests and error messages:
// "F0 F1 B0 F2 B1 ..." (chunk shown as F0.1 when chunks > 1).
std::string to_string(const std::vector<PipeOp>& ops, int chunks = 1);

PipelineSchedule make_gpipe(int ranks, int micro_batches);
PipelineSchedule make_one_f_one_b(int ranks, int micro_batches);
PipelineSchedule make_schedule(ScheduleKind kind, int ranks, int micro_batches);

}  // namespace trainsim::workloads
