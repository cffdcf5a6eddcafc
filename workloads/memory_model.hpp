#pragma once
// GPU memory of a training plan, per GPU over one iteration. Two views share
// the sizes defined here:
//  - the task graph carries them as memory events (iteration_builder: what
//    each task allocates when it starts and frees when it ends, plus each
//    GPU's resident bytes), so the replay's timeline gives memory over time
//    (analysis/memory_curve.hpp);
//  - estimate_memory() walks each pipeline rank's op list without
//    simulating, for the scenario check that runs before SimGrid.
//
// What is counted (docs/memory.md has the derivations):
//  - weights, gradients, optimizer state per parameter, by ZeRO stage over
//    the data-parallel group of D = dp x cp GPUs, or over the dp_shard GPUs
//    of a hybrid-sharded group (bytes_per_parameter);
//  - activations: each forward stores its layers' activations
//    (activation_memory.hpp), counted when it ends, until the matching
//    backward frees them at its end; a
//    zero-bubble input gradient (B) frees all but what the weight gradient
//    (W) still needs; recomputation adds one layer's working set during a
//    backward; BPipe's evicted activations live on the acceptor meanwhile;
//  - buffers for collectives: FSDP's gathered parameters (the unit running
//    and the one prefetched) and unsharded gradients waiting for their
//    reduce-scatter (ZeRO-2 and FSDP), ring attention's key/value blocks.
//  - imbalanced routing (model.moe.routing skewed, dropless, ep > 1;
//    workloads/expert_routing.hpp): a GPU keeps its own EP rank's load
//    factor f_l times the routed-copy activations of each MoE layer l (the
//    dispatch's receive buffer, the expert MLP intermediates, the combine's
//    buffer), so the GPUs of one pipeline rank differ; the estimate reports
//    each stage's busiest EP rank. Under a capacity factor every expert is
//    padded or cut to it: memory stays the balanced one.
// Not counted: the CUDA context and NCCL's own buffers, allocator
// fragmentation, activation gradients in flight inside a backward.
#include <string>
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

// Bytes each local parameter costs, by kind, under the plan's ZeRO stage
// (mixed-precision Adam: bf16 weights, grad_bytes-wide gradients, fp32
// master weights and two fp32 moments; Rajbhandari et al., SC20):
//   stage 0: 2 + g + 12         (16 with bf16 gradients; Megatron's 18 with fp32)
//   stage 1: 2 + g + 12 / D     (Megatron's distributed optimizer: 6 + 12/D with fp32 gradients)
//   stage 2: 2 + (g + 12) / D
//   stage 3: (2 + g + 12) / D   (FSDP; D = dp_shard under hybrid sharding)
MemoryBreakdown bytes_per_parameter(const ParallelPlan& plan);
// The same for parameters replicated on `replicas` GPUs (D for dense ones,
// the expert data-parallel dp x cp / ep for a MoE model's routed experts).
MemoryBreakdown bytes_per_parameter(const ParallelPlan& plan, int replicas);

// Net memory change of one op on one GPU: added when it starts, and when it
// ends (negative: freed).
struct OpMemory {
  MemoryBreakdown at_start;
  MemoryBreakdown at_end;
};

class GpuMemoryModel {
 public:
  GpuMemoryModel(const ModelSpec& model, const ParallelPlan& plan);

  // Parameters a GPU of pipeline rank `rank` holds: its layers (/ tp), the
  // embedding on the first virtual stage, the logits on the last, and with
  // tied embeddings and the last virtual stage on another rank than the
  // first, Megatron's copy of the embedding for the output layer.
  double parameters(int rank) const;
  // Of those, the routed experts' (sharded by expert parallelism).
  double expert_parameters(int rank) const;
  // The same for one virtual stage (a model chunk).
  double chunk_parameters(int virtual_stage) const;
  // Parameters of one layer on one GPU (/ tp), and of a per-layer piece
  // with the embedding / logits it carries (FSDP unit, gradient bucket
  // piece).
  double layer_parameters() const;
  // Pieces of a chunk: one per layer, one for a chunk of no layer (its
  // embedding or logits).
  int pieces(int virtual_stage) const;
  double piece_parameters(int virtual_stage, int layer_in_chunk) const;
  // Weights, gradients and optimizer state held all iteration.
  MemoryBreakdown resident(int rank) const;

  // Imbalanced routing changes what each GPU of an EP group keeps (dropless,
  // ep > 1, routing not balanced); false: every GPU of a pipeline rank the same.
  bool imbalanced() const { return !rank_loads_.empty(); }
  // EP rank `ep_rank`'s load factor in model layer `layer` (an MTP module's:
  // layers + k); 1 when not imbalanced, or for a dense layer.
  double routed_load(int ep_rank, int layer) const;

  // Activations one micro-batch leaves on a GPU after the forward of
  // `virtual_stage`: its layers plus the embedding / logits extras. ep_rank:
  // the GPU's EP rank, whose load factors scale the MoE layers' routed
  // copies under imbalanced routing (< 0: balanced loads).
  double stored_activations(int virtual_stage, int ep_rank = -1) const;
  // Of those, the transformer layers' alone: what a BPipe evictor sends
  // its acceptor (and gets back), at the same EP rank's loads.
  double layer_activations(int virtual_stage, int ep_rank = -1) const;
  // Of those, what a zero-bubble W still needs after B.
  double weight_gradient_hold(int virtual_stage, int ep_rank = -1) const;
  // The forward, backward, B or W of one micro-batch on `virtual_stage`.
  OpMemory op_memory(PipeOpKind kind, int virtual_stage, int ep_rank = -1) const;

  // Of those, the transformer layers' (what FP8 training casts to FP8).
  double layer_parameters_on(int rank) const;
  // FSDP: a gathered unit (bf16, with FP8 training Transformer Engine's FP8
  // copies beside it) and its unsharded gradients.
  double gathered_bytes(double parameters) const;
  double unsharded_gradient_bytes(double parameters) const { return plan_.grad_bytes * parameters; }
  // Ring attention: the key/value block a GPU holds and the one arriving.
  double kv_exchange_buffer_bytes() const;

  const ModelSpec& model() const { return model_; }
  const ParallelPlan& plan() const { return plan_; }
  // Virtual-stage layout of the plan (ranks, chunks, placement).
  const PipelineSchedule& layout() const { return layout_; }

 private:
  // The largest load factor of the MoE layers of `virtual_stage` (1 without
  // any, or balanced): the layer a recomputing backward rebuilds at worst.
  double largest_routed_load(int virtual_stage, int ep_rank) const;
  // EP rank `ep_rank`'s load factors in the MTP modules' layers.
  std::vector<double> mtp_loads(int ep_rank) const;

  ModelSpec model_;
  ParallelPlan plan_;
  PipelineSchedule layout_;
  // [EP rank][layer] load factors under imbalanced routing; empty otherwise.
  std::vector<std::vector<double>> rank_loads_;
};

// The static estimate: each pipeline rank's op list walked in order (no
// simulation), every op's memory applied at its start and end.
// Communication is taken to complete within the op after the one that
// starts it (an FSDP all-gather of the next unit, a reduce-scatter of the
// last unit's gradients, a ZeRO-2 reduce-scatter after the backward), and
// BPipe's transfers as instant, at the op boundaries BPipe schedules them;
// an acceptor is charged the most evicted micro-batches its evictor ever
// has away. The replay's timed curve can exceed the estimate when
// communication lags behind compute, and sit below it where a GPU never
// reaches the worst interleaving.
struct StageMemoryEstimate {
  int stage = 0;
  double peak_bytes = 0;
  MemoryBreakdown at_peak;
  // The op during or at the end of which the peak happens, as in schedule
  // op strings ("F7", "B3.1"), empty when it is the resident memory alone.
  std::string peak_op;
  // Most forwards (of one micro-batch through one model chunk) whose
  // backward, or zero-bubble input gradient, has not run yet, that the GPU
  // holds at once: the "micro-batches in flight" that schedule papers count
  // (a zero-bubble W's leftovers are in the bytes, not in this count).
  // BPipe's accepted ones included, evicted ones not.
  int max_forwards_held = 0;
  // Under imbalanced routing the EP rank whose GPUs reach this peak (the
  // stage's busiest); -1 when every GPU of the stage is the same.
  int ep_rank = -1;
};

struct MemoryEstimate {
  std::vector<StageMemoryEstimate> stages;  // one per pipeline rank
  int worst_stage() const;
};

MemoryEstimate estimate_memory(const ModelSpec& model, const ParallelPlan& plan,
                               const PipelineSchedule& schedule);

}  // namespace trainsim::workloads
