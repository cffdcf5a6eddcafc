#pragma once
// `trainsim run --balance auto`: a partition of the model's layers over the
// pipeline stages (and, when the data-parallel replicas run on different
// GPU types, of the micro-batches over the replicas) that equalises the
// stages' compute on the given hardware. docs/heterogeneous.md.
//
// The search works on the cost model's per-stage compute estimate, on each
// stage's actual GPU (the slowest of its TP / CP GPUs in each replica):
//
//   t(vs, d, l)  forward + backward of one micro-batch through virtual stage
//                vs holding l layers (plus the embedding / logits of the
//                first / last), on replica d's GPUs, plus the TP
//                all-reduces of those ops as rings over the stage's NVLink
//   R(r, d)      sum of t over the virtual stages of pipeline rank r
//   T(d)         sum over vs of t + (m_d - 1) x max over r of R(r, d)
//                (a 1F1B / GPipe pipeline: fill and drain once, then the
//                slowest rank sets the pace)
//   estimate     max over d of T(d); pipeline transfers, the optimizer step
//                and the DP gradient reduction are left out (the simulation
//                that follows has them)
//
// Partition step: the contiguous split of the layers minimising the largest
// per-stage cost max_d m_d x t(vs, d, l) (exact, by dynamic programming),
// then, among the splits reaching it, the smallest sum of those costs.
// Share step (only when replicas differ in GPU types): micro-batches handed
// out one unit at a time to the replica whose T grows least (exact for a
// max of nondecreasing functions); the unit is pp for interleaved_1f1b, and
// dualpipe_v keeps >= 2 pp per replica. The two steps alternate until
// neither changes (at most a few rounds). A candidate replaces the even
// split only when its estimate is lower by more than one part in 10^9, so a
// homogeneous cluster keeps the even split when nothing beats it. Fully
// deterministic: no randomness, ties go to the earlier candidate.
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

struct StagePartition {
  std::vector<int> stage_layers;      // per virtual stage
  std::vector<int> dp_micro_batches;  // per data-parallel replica
  double estimated_iteration_s = 0;   // the estimate above
  // Per virtual stage: the slowest replica's compute for one micro-batch.
  std::vector<double> stage_compute_s;
};

struct BalanceResult {
  StagePartition even;
  StagePartition balanced;          // == even when nothing beats it
  bool searched_dp_shares = false;  // the replicas differ in GPU types
};

// `plan` is the even plan (stage_layers and dp_micro_batches empty; its
// layers divide by pp x virtual_stages and its batch by micro_batch_size x
// dp). `max_stage_layers` (empty: no limit) caps each virtual stage, for
// callers that must keep a stage within memory.
BalanceResult balance_stages(const ModelSpec& model, const ParallelPlan& plan,
                             const platforms::ClusterSpec& cluster, const CostModel& cost,
                             const std::vector<int>& max_stage_layers = {});

// The estimate of one partition (for tests and reports).
double estimate_iteration_s(const ModelSpec& model, const ParallelPlan& plan,
                            const platforms::ClusterSpec& cluster, const CostModel& cost,
                            const std::vector<int>& stage_layers, const std::vector<int>& dp_micro_batches);

}  // namespace trainsim::workloads
