#pragma once
// Internal to workloads/: the state of one build_iteration call, shared by
// the files that each add one concern to the graph:
//   iteration_builder.cpp    compute ops (split into pieces where needed),
//                            TP collectives (all-reduce, or reduce-scatter +
//                            all-gather with sequence parallelism), the
//                            ring-attention exchange of context parallelism,
//                            pipeline sends, BPipe's evictions, memory events
//   data_parallel_sync.cpp   DP gradient all-reduce (ZeRO 0), reduce-scatter
//                            + parameter all-gather (ZeRO 1/2), gradient
//                            buckets overlapping the backward, optimizer step
//   fsdp.cpp                 ZeRO-3 / FSDP: per-layer parameter all-gathers
//                            with prefetch, per-layer gradient reduce-scatters
//   expert_parallel_sync.cpp MoE expert parallelism: the all-to-all
//                            dispatch and combine of every op's MoE layers
//                            over each EP group, and the gradient
//                            synchronisation split into dense (DP group)
//                            and expert (expert DP group) parameters
//   tied_embedding_sync.cpp  the all-reduce of a tied embedding's gradient
//                            between the first and the last pipeline stage
//                            (Megatron's embedding group), before the step
//   dualpipe_copy_sync.cpp   DualPipe: the all-reduce of the gradients of
//                            the two copies of each stage, before the step
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/expert_routing.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/moe_dispatch.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads::detail {

inline constexpr TaskId kNone = static_cast<TaskId>(-1);

// Where a collective sits in the schedule: the op it serves (chunk and
// micro-batch; a whole-stage collective such as the reduction after the last
// micro-batch keeps the defaults), the layer of a per-layer piece, how many
// identical passes it folds and an algorithm it insists on.
struct CollectiveAt {
  int chunk = 0;
  int micro_batch = -1;
  int layer = -1;
  int fold = 1;
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::automatic;
};

// The one way the builder spells a collective task (TP, CP, DP, FSDP, EP).
inline Task collective_task(CommKind comm, CollectiveOp op, int group, int stage, double bytes,
                            const CollectiveAt& at = {}) {
  return Task{.kind = TaskKind::collective,
              .comm = comm,
              .op = op,
              .algorithm = at.algorithm,
              .chunk = task_index(at.chunk),
              .layer = task_index(at.layer),
              .group = group,
              .stage = stage,
              .micro_batch = at.micro_batch,
              .fold = at.fold,
              .bytes = bytes};
}

// One piece of an op on one GPU: a layer (FSDP unit, gradient-bucket
// granularity) or the whole op. Under ring attention a piece is two compute
// tasks, the attention core (overlapping the key/value exchange) and the
// rest.
struct Piece {
  TaskId first = kNone;     // starts the piece
  TaskId last = kNone;      // ends it
  TaskId exchange = kNone;  // ring-attention exchange (shared by the CP group), if any
  int layer = -1;           // model layer (-1: the whole op)
  double parameters = 0;    // local parameters whose weights / gradients it uses
  // plan.delay_wgrad_compute: the piece's deferred weight gradient, after
  // `last` (its input gradient) and off the op's output path; kNone when
  // the piece computes both (deferred_weight_gradients.cpp).
  TaskId weight_gradient = kNone;
  // The piece's gradients are complete: its deferred weight gradient, or its end.
  TaskId gradients_done() const { return weight_gradient != kNone ? weight_gradient : last; }
};

// One op of a rank's schedule as built on one GPU.
struct BuiltOp {
  PipeOp op;
  int virtual_stage = 0;
  std::vector<Piece> pieces;  // in execution order (a backward runs its layers last to first)
  TaskId done = kNone;        // output ready: the last piece, or the op's (last) TP collective
};

inline bool produces_gradients(PipeOpKind kind) {
  return kind == PipeOpKind::backward || kind == PipeOpKind::backward_weight;
}
inline bool needs_weights(PipeOpKind kind) {
  return kind != PipeOpKind::backward_weight;
}

class IterationBuilder {
 public:
  IterationBuilder(const ModelSpec& model, const ParallelPlan& plan, const platforms::ClusterSpec& cluster,
                   const CostModel& cost);
  TaskGraph build(const GraphCounts& reserve);

 private:
  std::size_t idx(int gpu) const { return static_cast<std::size_t>(gpu); }
  std::size_t slot(int chunk, int mb) const { return static_cast<std::size_t>(chunk * m_ + mb); }
  // The schedule of data-parallel replica `dp` (replicas differ only in their
  // micro-batch counts, plan.dp_micro_batches).
  const PipelineSchedule& schedule(int dp) const { return schedules_[static_cast<std::size_t>(dp)]; }
  std::size_t last_gradient_op(int dp, int rank, int chunk) const {
    return last_gradient_op_[static_cast<std::size_t>(dp)][static_cast<std::size_t>(rank)]
                            [static_cast<std::size_t>(chunk)];
  }
  std::size_t first_forward_op(int dp, int rank, int chunk) const {
    return first_forward_op_[static_cast<std::size_t>(dp)][static_cast<std::size_t>(rank)]
                            [static_cast<std::size_t>(chunk)];
  }
  OpCost op_cost(PipeOpKind kind, const StageSlice& slice, const platforms::GpuSpec& gpu) const;

  // iteration_builder.cpp
  bool split_per_layer(int dp, int rank, std::size_t op_index) const;
  // plan.moe_a2a_overlap: op `op_index` of the rank's list (a backward)
  // runs merged with the forward before it, both running MoE layers
  // (Megatron's 1F1B A2A overlap: every forward-then-backward of the list;
  // DualPipe-V: its paired F&B). Both are split per layer with an
  // all-to-all after each MoE layer; the backward's pieces wait only for
  // the forward's first piece, so the GPU runs one's layers while the
  // other's all-to-alls are in flight, and its last piece waits for the
  // forward's end.
  bool overlaps_previous(int dp, int rank, std::size_t op_index) const;
  // Lets op k + 1 of `gpu` start after `id` (op k's output): its first
  // piece, or for a merged backward its last piece.
  void gate_next(TaskId id, int gpu, std::size_t k);
  void add_rank_ops(int dp, int rank);
  // Replicas whose ops are built alike (same micro-batches, same GpuSpec
  // object on each GPU of the same place): the later ones are copies of the
  // first's (TaskGraph::append_image).
  std::pair<int, std::vector<const platforms::GpuSpec*>> replica_likeness(int dp) const;
  std::vector<int> replica_image(int source, int dp, std::vector<int>& sources) const;
  void copy_replica_ops(int source, int dp, const TaskGraph::Mark& begin, const TaskGraph::Mark& end);
  void copy_replica_sends(int source, int dp, const TaskGraph::Mark& begin, const TaskGraph::Mark& end,
                          const TaskGraph::Copied& ops);
  void add_op(int dp, int rank, std::size_t op_index, const std::vector<int>& tp_groups,
              const std::vector<int>& cp_groups);
  // The steps of add_op.
  struct PieceSpec {
    StageSlice slice;
    int layer = -1;  // model layer (-1: the whole op)
    double parameters = 0;
    bool defers_weight_gradient = false;  // plan.delay_wgrad_compute (deferred_weight_gradients.cpp)
  };
  std::vector<PieceSpec> piece_specs(const PipeOp& op, const StageSlice& slice, int vs, bool per_layer) const;
  std::vector<OpCost> piece_costs(PipeOpKind kind, const StageSlice& slice,
                                  const std::vector<PieceSpec>& specs, const platforms::GpuSpec& gpu) const;
  std::vector<BuiltOp> add_pieces(const PipeOp& op, int rank, int vs, const StageSlice& slice,
                                  const std::vector<PieceSpec>& specs, const std::vector<int>& gpus,
                                  const std::vector<int>& tp_groups, const std::vector<int>& cp_groups);
  // deferred_weight_gradients.cpp: plan.delay_wgrad_compute. Whether op
  // `op_index` of the rank's list (a backward running MoE layers) defers
  // its MoE layers' weight gradients, which pieces of it do
  // (`gpus_last_piece`: the last piece of the GPU's last op, which keeps
  // its weight gradient), the cost model's weight-gradient share of a
  // slice's backward on a GPU spec, and the weight-gradient task split off
  // a piece's backward task `task` (which keeps the input gradient) whose
  // op-scaled cost is `piece`.
  bool defers_weight_gradients(int dp, int rank, std::size_t op_index) const;
  bool defers_piece(const PieceSpec& spec, bool deferring, bool gpus_last_piece) const;
  struct WeightShare {
    double duration = 0, model_flops = 0, hardware_flops = 0;
  };
  WeightShare weight_gradient_share(const StageSlice& slice, const platforms::GpuSpec& gpu) const;
  Task split_off_weight_gradient(Task& task, const OpCost& piece, const WeightShare& share) const;
  // plan.tp_comm_overlap (Transformer Engine's userbuffers) for ops of this
  // kind on this slice (a chunk of no layer has no TP collective to overlap).
  bool overlaps_tp_comm(PipeOpKind kind, const StageSlice& slice) const;
  // Bytes of one TP collective pass of an op of `kind` (FP8 halves the
  // all-gathers, workloads/precision.hpp; MLA gathers its latents,
  // stage_slices.hpp).
  double tp_pass_bytes(CollectiveOp pass, PipeOpKind kind) const;
  std::vector<Task> split_linear_gemms(Task& rest, double linear_s) const;
  void add_overlapped_tp_collectives(const PipeOp& op, int rank, const PieceSpec& spec,
                                     const std::vector<int>& tp_groups,
                                     const std::vector<std::vector<TaskId>>& gemm_chunks,
                                     std::vector<BuiltOp>& built);
  // async_tp_units.cpp: plan.tp_comm_overlap: torch_async
  // (workloads/torch_async_tp.hpp) for ops of this kind on this slice.
  bool runs_async_tp(PipeOpKind kind, const StageSlice& slice) const;
  // One GPU's fused ops of one piece: their undivided GEMMs taken out of the
  // piece's rest, and the fields their tasks copy.
  struct AsyncTpPiece {
    std::vector<AsyncTpUnit> units;
    double layers = 0;
    Task base;
    double model_flops_per_s = 0, hardware_flops_per_s = 0;
  };
  AsyncTpPiece take_async_tp_gemms(Task& rest, std::vector<AsyncTpUnit> units, const StageSlice& slice) const;
  void add_async_tp_units(const PipeOp& op, int rank, const PieceSpec& spec, const std::vector<int>& gpus,
                          const std::vector<int>& tp_groups, const std::vector<AsyncTpPiece>& pieces,
                          std::vector<BuiltOp>& built);
  int async_tp_plain_fold(PipeOpKind kind, const StageSlice& slice, CollectiveOp pass) const;
  void add_ring_attention_exchange(const PipeOp& op, int rank, const PieceSpec& spec, int passes,
                                   const std::vector<int>& gpus, const std::vector<int>& cp_groups,
                                   std::vector<BuiltOp>& built);
  void add_tp_collectives(const PipeOp& op, int rank, const StageSlice& slice,
                          const std::vector<int>& tp_groups, std::vector<BuiltOp>& built);
  void record_op(const PipeOp& op, int vs, const std::vector<int>& gpus, std::vector<BuiltOp>& built);
  void add_pipeline_sends(int dp, int cp);
  void add_evictions(int dp, int cp);
  // `input` gates op `op_index` of `gpu`: its first task and its exchange.
  void gate(TaskId input, int gpu, std::size_t op_index);
  struct Transfer {
    int from = 0, to = 0, stage = 0, chunk = 0, mb = 0;
    double bytes = 0;
    TransferKind transfer = TransferKind::none;
  };
  TaskId add_send(const Transfer& t, const std::vector<TaskId>& after);
  void hold_sender(TaskId send, int gpu, std::size_t producer);

  // overlapped_p2p.cpp: plan.p2p: overlap (Megatron's interleaved schedule
  // with overlap_p2p_comm). The op of `gpu` after which the receive of op
  // `consumer`'s input is posted (none: posted before the loop), and the
  // send's hold on the sender's next op of the producer's kind.
  std::optional<std::size_t> overlap_receive_posted(int gpu, std::size_t consumer) const;
  void overlap_hold_sender(TaskId send, int gpu, std::size_t producer);

  // tied_embedding_sync.cpp: model.tied_embeddings with the output layer on
  // another rank than the embedding (pp > 1, not DualPipe-V's V).
  int output_layer_rank() const;
  bool syncs_tied_embedding() const;
  double tied_embedding_grad_bytes() const;
  // The embedding group's all-reduce of `gpu` (of pipeline rank `rank`)
  // after `after` and the GPU's last task, when the GPU holds a tied
  // embedding copy: the task its optimizer step must wait for. Otherwise
  // `after`.
  TaskId add_tied_embedding_sync(int rank, int gpu, TaskId after);

  // dualpipe_copy_sync.cpp: DualPipe's two copies of every stage (pipeline
  // ranks r and p - 1 - r) sum their gradients: the pair's all-reduce of
  // the `parameters` `gpu` steps on, after `after` and the GPU's last task,
  // the task its optimizer step must wait for. Otherwise `after`.
  bool syncs_parameter_copies() const;
  TaskId add_parameter_copy_sync(int rank, int gpu, TaskId after, double parameters);

  // pair_all_reduce.cpp: the all-reduce of two GPUs of one data-, context-
  // and tensor-parallel position on two pipeline ranks (the tied embedding's,
  // DualPipe's copies'), made once per pair (`made`, by its first GPU) with
  // `bytes` and joined by `gpu` (of pipeline rank `rank`) after `after` and
  // the GPU's last task. Returns the all-reduce.
  TaskId add_pair_all_reduce(std::map<int, TaskId>& made, int first, int second, int rank, int gpu,
                             TaskId after, double bytes);

  // data_parallel_sync.cpp (ZeRO 0-2) and fsdp.cpp (ZeRO 3): gradient
  // synchronisation of the GPUs holding (rank, tp rank), then the optimizer.
  void add_gradient_sync_and_step(int rank, int tp);
  void add_fsdp_sync_and_step(int rank, int tp);
  void add_overlapped_param_gathers(int rank, const std::vector<int>& members, int group);
  // Bytes FSDP's all-gather of a piece moves (FP8 weights at 1 byte with
  // plan.fp8_param_gather).
  double gather_wire_bytes(const Piece& piece) const;
  void add_hybrid_all_reduces(int rank, const std::vector<int>& all,
                              const std::vector<std::vector<TaskId>>& reduces);
  // expert_parallel_sync.cpp: plan.ep > 1 on a MoE model. The all-to-alls
  // of pipeline rank `rank`'s EP group `members` (expert_parallel_groups).
  void add_expert_all_to_alls(int rank, const std::vector<int>& members);
  // Imbalanced routing (dropless, ep > 1, routing not balanced;
  // workloads/expert_routing.hpp): each MoE op runs as one piece per layer
  // with an all-to-all after each MoE layer's piece, each GPU's pieces
  // taking what its experts' load adds (expert_load_extra_s), and the
  // all-to-alls moving each rank's tokens by the receivers' loads
  // (exchange_bytes).
  bool imbalanced() const { return imbalanced_; }
  // The load factor of `gpu`'s EP rank in model layer `layer` (an MTP
  // module's: layers + k).
  double load_factor(int layer, int gpu) const;
  // What the MoE layers of `slice` (its MTP modules' too) add to a pass of
  // `kind` on `gpu`.
  double expert_load_extra_s(PipeOpKind kind, const StageSlice& slice, int gpu) const;
  // The uneven all-to-all of an EP group (group order = EP rank order) over
  // the MoE layers of `slice` in an op of `kind`: bytes each rank sends
  // each rank, all folded passes together; under plan.moe_dispatcher deepep
  // DeepEP's dispatch and combine apart (workloads/moe_dispatch.hpp), for a
  // group lying over `nodes`.
  Exchange exchange_of(PipeOpKind kind, const StageSlice& slice, const EpNodes& nodes) const;
  // The exchange of an op's all-to-all, one per (passes per layer, MoE
  // layers, node layout): loads do not change with the micro-batch or group.
  int exchange_index(PipeOpKind kind, const StageSlice& slice, const EpNodes& nodes);
  // The model layers whose experts a slice runs: its MoE layers, then the
  // MTP modules' on the last stage.
  std::vector<int> moe_layer_indices(const StageSlice& slice) const;
  // The all-to-alls of op `k` of the EP group's members, one after each
  // MoE layer's piece (imbalanced routing, merged F&B ops).
  void add_per_layer_all_to_alls(const PipeOp& op, std::size_t k, const StageSlice& slice, int group,
                                 const std::vector<int>& members, const EpNodes& nodes);
  void add_expert_parallel_sync_and_step(int rank, int tp);
  // expert_parallel_grad_overlap.cpp: with plan.overlap_grad_reduce, the
  // dense buckets over `dense_group` (-1: none) and the expert buckets over
  // each expert data-parallel group (member indices, group ids; none when
  // empty) during the backward; sets each member's `ready` to its last.
  void add_overlapped_expert_reductions(int rank, const std::vector<int>& members, int dense_group,
                                        const std::vector<std::vector<std::size_t>>& expert_groups,
                                        const std::vector<int>& expert_group_ids, std::vector<TaskId>& ready);
  // The routed experts' parameters on one GPU of a built piece (an MTP
  // module's with the last layer of the last stage), and of a slice.
  double piece_expert_parameters(const BuiltOp& built, const Piece& piece) const;
  double stage_expert_parameters_of_slice(const StageSlice& slice) const;
  // expert_tensor_parallel_sync.cpp: the same with expert_tp != tp, over a
  // whole stage: each TP rank's dense data-parallel group, then the expert
  // data-parallel groups that cross TP ranks.
  void add_folded_expert_sync_and_step(int rank);
  // expert_tensor_parallel_collectives.cpp: 1 < expert_tp < tp. Each
  // expert-TP group of the op's GPUs (expert_tp consecutive TP ranks)
  // all-gathers the tokens its members received from the dispatch and
  // reduce-scatters the experts' outputs, every MoE layer of the op folded
  // into one pair, after the op's TP collectives and before its
  // all-to-all.
  void add_expert_tp_collectives(const PipeOp& op, int rank, const StageSlice& slice,
                                 const std::vector<int>& gpus, std::vector<BuiltOp>& built);
  // The data-parallel group of (rank, tp): dp x cp GPUs, in ring order.
  std::vector<int> data_parallel_members(int rank, int tp) const;
  // Each member's optimizer step over `parameters` local parameters, after
  // `after` (kNone: after the member's last task); updates last_.
  std::vector<TaskId> add_optimizer_steps(int rank, const std::vector<int>& members, double parameters,
                                          TaskId after);

  const ModelSpec& model_;
  const ParallelPlan& plan_;
  const platforms::ClusterSpec& cluster_;
  const CostModel& cost_;
  GpuMemoryModel memory_;
  std::vector<PipelineSchedule> schedules_;  // per DP replica
  int m_ = 0;                                // the most micro-batches of any replica: the slot stride
  TaskGraph graph_;
  // Per GPU: its ops in list order, and which op runs each (chunk,
  // micro-batch) forward and backward (B, or the zero-bubble input gradient).
  std::vector<std::vector<BuiltOp>> ops_;
  std::vector<std::vector<std::size_t>> forward_op_, backward_op_;
  // Per DP replica, rank and chunk: the index of the last op producing
  // weight gradients (where Megatron's overlapped buckets fire).
  std::vector<std::vector<std::vector<std::size_t>>> last_gradient_op_;
  // ... and of its first forward (where plan.overlap_param_gather's
  // bucketed gathers land).
  std::vector<std::vector<std::vector<std::size_t>>> first_forward_op_;
  std::vector<TaskId> last_;
  // Per GPU: a deferred weight gradient the GPU's next compute piece waits
  // for (its compute stream runs it first), kNone when none is pending.
  std::vector<TaskId> pending_weight_gradient_;
  bool imbalanced_ = false;
  ExpertLoads loads_;
  // (passes per layer, MoE layers, nodes, GPUs per node) -> its
  // TaskGraph::exchanges entry.
  std::map<std::tuple<int, std::vector<int>, int, int>, int> exchange_of_;
  // Imbalanced routing with deepep: (layer, nodes, expert sets per node) ->
  // its touch probabilities (a cache of skewed_touch_probabilities).
  mutable std::map<std::tuple<int, int, int>, TouchProbabilities> touch_of_;
  // Expert-TP groups by their first GPU: one group per set of GPUs.
  std::map<int, int> expert_tp_group_of_;
  // First-stage GPU -> its embedding group's all-reduce.
  std::map<int, TaskId> tied_embedding_sync_;
  // GPU of the lower rank of a DualPipe pair -> the pair's all-reduce.
  std::map<int, TaskId> parameter_copy_sync_;
};

}  // namespace trainsim::workloads::detail
