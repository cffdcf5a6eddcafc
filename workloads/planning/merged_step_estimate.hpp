#pragma once
// The plan estimate's merged F&B step (plan.moe_a2a_overlap;
// workloads/planning/plan_estimate.hpp): how long one steady-state forward
// and the backward paired with it take on a GPU when each runs one piece
// per layer with its expert all-to-all after every MoE layer's piece, as
// the replay runs them (workloads/graph_builder/iteration_builder.cpp,
// overlaps_previous; expert_parallel_sync.cpp, add_per_layer_all_to_alls).
// docs/plan_search.md, "The estimate", derives it.
//
// Hiding the forward's all-to-alls under the backward's whole compute and
// the backward's under the forward's (the estimate before this file) is
// 10-12% optimistic on DeepSeek-V3's layout: the two ops alternate piece
// by piece, so a backward piece's all-to-all (two pass pairs with full
// recomputation) hides only under the one forward piece that runs next
// (a third of its length), the backward's last pieces find no forward
// piece left, the two ops' all-to-alls that overlap share the NIC, and
// compute beside them runs slower (compute_interference).
// This file runs that schedule as a list scheduler, at piece granularity:
//
//   GPU        one piece at a time, the earliest ready first (the forward's
//              on a tie)
//   forward    piece i + 1 after piece i and its all-to-all
//   backward   its first piece after the forward's first piece, piece
//              j + 1 after piece j and its all-to-all, its last piece also
//              after the forward's end (its last all-to-all)
//   op's end   after its last piece: its TP (and expert-TP) collectives
//              (tail_s, not shared), then its last piece's all-to-all
//   all-to-alls  in flight at once share the EP group's links equally
//              (processor sharing: each of k runs at 1/k of its
//              uncontended speed), as the replay's flows of two
//              identical exchanges on the same NICs do
//   interference  while anything is in flight the GPU computes at
//              1 - cluster.collectives.compute_interference of its speed,
//              as the replay slows compute beside a communication
//
// The step's time is the backward's end. Uncontended all-to-all times come
// from expert_estimate.hpp; the pieces' compute from the cost model, split
// over the layers as the graph builder splits an op (piece_costs).
//
// plan.delay_wgrad_compute (workloads/graph_builder/deferred_weight_gradients.cpp):
// a MoE layer's backward piece computes its input gradient, then its
// communication starts and its weight gradient becomes ready beside it,
// run on the GPU like any piece (the earliest ready first); the op's next
// piece waits for both. The cool-down's backwards, which run alone, defer
// too: lone_backward_s.
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/planning/expert_estimate.hpp"
#include "workloads/planning/routing_skew_estimate.hpp"
#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

struct MergedPiece {
  double compute_s = 0;   // the piece's kernels (with a deferral: its input gradient)
  double a2a_s = 0;       // its all-to-all's uncontended time (0: a dense layer)
  double deferred_s = 0;  // its weight gradient, run beside its communication (0: none deferred)
};

struct MergedOp {
  std::vector<MergedPiece> pieces;  // in the order the op runs them
  double tail_s = 0;                // TP / expert-TP collectives after the last piece
};

// One merged step, from the forward's first piece to the backward's end.
// Both ops must have at least one piece. `compute_interference`: the share
// of the GPU's speed its communication takes (0 <= share < 1).
double merged_step_s(const MergedOp& forward, const MergedOp& backward, double compute_interference = 0);

// A backward with no forward beside it (1F1B's cool-down), piece by piece
// as above: with deferred weight gradients each MoE piece's W runs beside
// its all-to-all, min(W, (1 - interference) x all-to-all) shorter than
// serial_op_s (the last piece's W beside its tail and all-to-all).
double lone_backward_s(const MergedOp& backward, double compute_interference = 0);

// The op run serially: every piece's compute, weight gradient and
// all-to-all, and the tail.
double serial_op_s(const MergedOp& op);

// Whether the plan defers MoE layers' weight gradients (delay_wgrad_compute
// under the EP A2A overlap, ep > 1, a MoE model), as the replay does.
bool defers_weight_gradients(const ModelSpec& model, const ParallelPlan& plan);

// An op of `kind` over `slice` as the replay splits it when merged: one
// piece per layer (the embedding with the first, the logits and MTP
// modules with the last; a backward last layer first), each piece's share
// of the whole op's cost-model time (divided by cp) in proportion to the
// cost model's per-layer answers, the all-to-all after each MoE piece
// `exchange`'s pass pair x its pass pairs (ep_all_to_alls / 2), and
// `tail_s`. Under skewed routing each MoE piece also takes its busiest
// rank's extra expert GEMMs and its all-to-all that layer's exchange factor
// (routing_skew_estimate.hpp). A backward whose plan defers weight
// gradients moves each MoE piece's backward_weight share into deferred_s.
MergedOp merged_op(const ModelSpec& model, const ParallelPlan& plan, const CostModel& cost,
                   const platforms::GpuSpec& gpu, const StageSlice& slice, PipeOpKind kind,
                   const ExpertExchangeEstimate& exchange, const RoutingSkewEstimate& skew, double tail_s);

}  // namespace trainsim::workloads
