#pragma once
// Internal to workloads/schedules/: one rank's op list as DeepSeek's
// DualPipe and DualPipeV (deepseek-ai/DualPipe, dualpipe/dualpipe.py and
// dualpipev.py) build it, shared by dualpipe.cpp and dualpipe_v.cpp. The
// reference's _forward_chunk, _backward_chunk (enable_zb), _weight_chunk
// and _forward_backward_chunk become forward(), backward(), weight() and
// forward_backward(): micro-batch ids count up per chunk and kind
// (current_f_chunk_id, current_b_chunk_id), and a zero-bubble backward
// leaves its weight gradient in a FIFO that weight() pops
// (WeightGradStore). An overlapped pair F&B is listed as F then a backward
// marked `paired`: the builder runs the two merged under
// plan.moe_a2a_overlap (their layers interleaved, each one's expert
// all-to-alls under the other's compute), else F then B on the compute
// stream.
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "workloads/schedule.hpp"

namespace trainsim::workloads::detail {

class DualPipeOpList {
 public:
  DualPipeOpList(std::vector<PipeOp>& ops, std::string schedule)
      : ops_(ops), schedule_(std::move(schedule)) {}

  void forward(int chunk) { ops_.push_back({PipeOpKind::forward, next_forward_[chunk]++, chunk}); }
  void backward(int chunk, bool zero_bubble = false, bool paired = false) {
    const int mb = next_backward_[chunk]++;
    if (zero_bubble) {
      ops_.push_back({PipeOpKind::backward_input, mb, chunk, paired});
      pending_weights_.push_back({PipeOpKind::backward_weight, mb, chunk});
    } else {
      ops_.push_back({PipeOpKind::backward, mb, chunk, paired});
    }
  }
  void weight() {
    if (pending_weights_.empty())
      throw std::logic_error(schedule_ + ": weight pass with no pending weight gradient");
    ops_.push_back(pending_weights_.front());
    pending_weights_.pop_front();
  }
  // An overlapped F&B pair: the forward of one chunk and the backward of the
  // other.
  void forward_backward(int forward_chunk, int backward_chunk) {
    forward(forward_chunk);
    backward(backward_chunk, false, true);
  }
  // The reference asserts the store is empty at the end of its step.
  void finish() const {
    if (!pending_weights_.empty())
      throw std::logic_error(schedule_ + ": weight gradients left pending");
  }

 private:
  std::vector<PipeOp>& ops_;
  std::string schedule_;
  int next_forward_[2] = {0, 0}, next_backward_[2] = {0, 0};
  std::deque<PipeOp> pending_weights_;
};

}  // namespace trainsim::workloads::detail
