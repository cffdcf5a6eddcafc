#pragma once
// A fast analytic estimate of one plan's iteration time, for ranking the
// candidates of a plan search before the best few are simulated. Nothing is
// replayed: the compute times are the cost model's (the same CostModel the
// simulation uses), the schedule's bubble is its closed form, and every
// collective is its uncontended ring closed form (docs/collectives.md) over
// the bandwidths of the cluster. docs/plan_search.md derives each term.
//
// Per pipeline rank r, one micro-batch: F_r, B_r (backward, with any
// recomputation) and, split, Bi_r + W_r, each the sum over the rank's model
// chunks, plus the TP collectives after each op (2 all-reduces per layer
// forward, 2 backward, 2 more with full recomputation; sequence parallelism
// moves the same volume; with tp_comm_overlap what shows beyond the GEMMs:
// userbuffers' k-chunk pipeline, or torch's async TP's fused ops), and for
// MoE models with ep > 1 the expert all-to-alls of its MoE layers
// (workloads/planning/expert_estimate.hpp), serial with the compute
// (moe_a2a_overlap: in each steady-state step what the merged forward and
// backward, run piece by piece, take beyond their compute:
// workloads/planning/merged_step_estimate.hpp; with delay_wgrad_compute each
// MoE layer's weight gradient runs beside its all-to-all there and in the
// cool-down's lone backwards, which hide min(W, (1 - interference) a2a) per
// layer). FSDP stretches each layer to the longer of its compute and its
// parameter gathers / gradient reduce-scatter (prefetched on
// the DP stream). With t_r = F_r + B_r and t = max_r t_r:
//
//   gpipe, 1f1b, bpipe   sum_r t_r + (m - 1) t                (bubble (p-1)/(m+p-1) when balanced)
//   interleaved_1f1b     m t + (p - 1) t / v
//   zb_h1                m max_r(F+Bi+W) + (p - 1) max_r(F + Bi - W)
//   zb_h2, zb_v,
//   dualpipe_v           m max_r(F+Bi+W) + (p - 1) max(0, max_r(F + Bi - 2W))
//   dualpipe             m/2 max_r(F+Bi+W) + (p/2 - 1) max(0, max_r(F + 2B - 3W) / 2)
//                        (each rank's two whole-stage chunks run m/2 micro-batches each;
//                        DeepSeek-V3's Table 2 with F&B = F + B, an upper bound of the
//                        replay: docs/schedules.md)
//
// plus the pipeline transfers of the fill and the drain (2 (p v - 1) sends),
// the exposed data-parallel communication (ZeRO 0/1: the gradient reduction
// after the backward; with overlap_grad_reduce what the last backward does
// not cover; expert parameters over their expert data-parallel group;
// ZeRO 2: one reduce-scatter per micro-batch, exposed beyond the
// compute it can hide behind; FSDP: inside the stretched layers) and the
// optimizer step.
#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

struct PlanEstimate {
  double iteration_s = 0;
  // On the slowest pipeline rank, over the iteration:
  double compute_s = 0;     // forward and backward kernels (recomputation included), m micro-batches
  double tp_comm_s = 0;     // TP collectives (serial with the compute; with tp_comm_overlap, what shows)
  double ep_comm_s = 0;     // expert all-to-alls (serial; with moe_a2a_overlap, what shows)
  double bubble_s = 0;      // pipeline fill and drain (the schedule's formula)
  double pp_comm_s = 0;     // pipeline transfers on the critical path
  double dp_comm_s = 0;     // data-parallel / ZeRO / FSDP traffic (busy time of the DP stream)
  double dp_exposed_s = 0;  // the part of it not hidden under compute
  double optimizer_s = 0;
  double bubble_fraction() const { return iteration_s > 0 ? bubble_s / iteration_s : 0; }
};

// Uncontended ring time of one collective of `bytes` (nccl-tests' size)
// over `ranks` GPUs with `channels` rings of `bandwidth_Bps` each and a
// per-hop latency, plus the launch latency: all-reduce 2(n-1)(a + S/(nCB)),
// reduce-scatter and all-gather (n-1)(a + S/(nCB)).
double ring_time_s(CollectiveOp op, double bytes, int ranks, int channels, double bandwidth_Bps,
                   double hop_latency_s, double launch_latency_s);

// The plan must be valid for the model and the cluster (the scenario loader
// checks it first). `cost` is the model the simulation would use
// (scenario::make_cost_model), on the cluster's GPUs.
PlanEstimate estimate_plan(const ModelSpec& model, const ParallelPlan& plan,
                           const platforms::ClusterSpec& cluster, const CostModel& cost);

}  // namespace trainsim::workloads
