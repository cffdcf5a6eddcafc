#pragma once
// The plan estimate's skewed routing (model.moe.routing zipf, dirichlet or
// measured, dropless, ep > 1; workloads/expert_routing.hpp): the replay runs
// every MoE layer at the pace of its busiest EP rank (the rank whose experts
// receive the largest share of the layer's token copies, load factor
// f = ep x that share), through two costs the balanced estimate leaves out.
// docs/plan_search.md, "Skewed routing", derives them.
//
//   compute     the busiest rank's expert GEMMs take f times the balanced
//               ones: CostModel::moe_load_extra_s(kind, f) more per layer,
//               which every member of the group waits for at the layer's
//               all-to-all
//   exchange    all_to_all: rank i sends rank j B (f_i + f_j) / n per pass
//               (expert_parallel_sync.cpp), so the busiest rank moves
//               ((n - 2) f + n) / (2 (n - 1)) of the balanced bytes;
//               deepep: a GPU receives each token once if it touches one of
//               its experts, and P(touched) is concave in the GPU's share
//               with P(0) = 0, so the busiest receives at most f times the
//               balanced bytes: that bound (the replay computes the touch
//               probabilities by Monte Carlo, too slow for a search)
//
// Per layer, with its own f: the hot experts differ from layer to layer.
// The balanced case (and capacity-factor runs, which pad every expert to
// the same load) changes nothing.
#include <vector>

#include "platforms/gpu_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/planning/expert_estimate.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {

// Holds `model` by reference (it must outlive the estimate); the plan's
// figures it needs are copied.
class RoutingSkewEstimate {
 public:
  RoutingSkewEstimate(const ModelSpec& model, const ParallelPlan& plan);

  // Whether the plan's routing changes the estimate at all.
  bool active() const { return !busiest_.empty(); }
  // The busiest EP rank's load factor in one MoE layer (index as
  // moe_layer_indices gives it); 1 when inactive.
  double busiest(int layer) const;
  // What the busiest ranks' extra expert GEMMs add to an op over `slice`.
  double extra_compute_s(PipeOpKind kind, const StageSlice& slice, const CostModel& cost,
                         const platforms::GpuSpec& gpu) const;
  // The mean over `slice`'s MoE layers of the factor on one layer's
  // dispatch and combine bytes (1 when inactive or without MoE layers).
  double exchange_factor(const StageSlice& slice) const;
  // One MoE layer's dispatch and combine over `slice`: the balanced
  // estimate with its transfer time scaled by exchange_factor (latencies
  // and launches unchanged).
  double pass_pair_s(const ExpertExchangeEstimate& balanced, const StageSlice& slice) const {
    return balanced.pass_pair_s + balanced.transfer_s * (exchange_factor(slice) - 1);
  }

 private:
  const ModelSpec& model_;
  int ep_ = 1;
  MoeDispatcher dispatcher_ = MoeDispatcher::all_to_all;
  std::vector<double> busiest_;  // per layer index (model layers, then MTP); 1 for dense layers
};

}  // namespace trainsim::workloads
