#pragma once
// Collectives expanded into point-to-point flows, as NCCL runs them. A
// Collective is a small state machine: it says which flows may start, and
// which may start next each time one finishes; the replay turns flows into
// SimGrid communications, so collectives contend with everything else on the
// links they cross.
#include <memory>
#include <vector>

#include "workloads/task_graph.hpp"

namespace trainsim::sim {

struct FlowRequest {
  int src_gpu;
  int dst_gpu;
  double bytes;
  int rank;  // the sending rank's position in the group
};

class Collective {
 public:
  virtual ~Collective() = default;
  // Appends the flows that start with the collective.
  virtual void start(std::vector<FlowRequest>& out) = 0;
  // The flow sent by `rank` finished: appends the flows that may start now.
  virtual void on_flow_done(int rank, std::vector<FlowRequest>& out) = 0;
  virtual bool finished() const = 0;
  // Sequential latency terms of one pass (ring: 2(n-1) for an all-reduce),
  // used to charge the extra latency of folded collectives.
  virtual int latency_steps() const = 0;
};

// Ring algorithm over `gpus` in the given order (rank i sends to i + 1):
// all-reduce = reduce-scatter + all-gather, 2(n-1) steps of bytes/n each;
// reduce-scatter and all-gather n-1 steps. Step k of rank i waits for its own
// step k-1 and for step k-1 of rank i-1 (the chunk it forwards), which gives
// 2(n-1)(alpha + S/(n B)) on uniform links.
std::unique_ptr<Collective> make_ring(workloads::CollectiveOp op, const std::vector<int>& gpus, double bytes);

}  // namespace trainsim::sim
