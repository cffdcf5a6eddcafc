// overlap_grad_reduce_allowed and overlap_param_gather_allowed
// (workloads/plan_checks.hpp), which the plan search reads to carry a base
// scenario's overlaps to its candidates, against plan_problems itself: on
// every plan of a MoE grid that is valid without the key, setting it keeps
// the plan valid exactly where the predicate says so.
#include <gtest/gtest.h>

#include "workloads/model_spec.hpp"
#include "workloads/plan_checks.hpp"

namespace trainsim::workloads {
namespace {

// Mixtral 8x7B (8 experts) shrunk to 2 layers on one stage of 8 x tp GPUs:
// ZeRO 0 to 3, tp 1 / 2 / 4 (sequence parallel), every expert TP dividing
// tp, ep 1 / 2 / 4 / 8.
template <typename Visit>
void for_each_moe_plan(Visit visit) {
  auto model = *find_model_preset("mixtral-8x7b");
  model.layers = 2;
  for (int zero = 0; zero <= 3; ++zero)
    for (int tp : {1, 2, 4})
      for (int etp = 0; etp <= tp; ++etp) {
        if (etp > 0 && tp % etp != 0)
          continue;
        for (int ep : {1, 2, 4, 8}) {
          ParallelPlan plan{
              .dp = 8, .tp = tp, .pp = 1, .ep = ep, .micro_batch_size = 1, .global_batch_size = 8};
          plan.etp = etp;
          plan.sequence_parallel = tp > 1;
          plan.zero_stage = zero;
          visit(model, plan);
        }
      }
}

TEST(GradientOverlapRules, TheLoaderAcceptsOverlapGradReduceExactlyWhereThePredicateAllowsIt) {
  int allowed_with_ep = 0, refused_folded = 0, refused_fsdp = 0;
  for_each_moe_plan([&](const ModelSpec& model, ParallelPlan plan) {
    if (!plan_problems(model, plan).empty())
      return;
    plan.overlap_grad_reduce = true;
    const bool accepted = plan_problems(model, plan).empty();
    EXPECT_EQ(accepted, overlap_grad_reduce_allowed(plan))
        << "zero " << plan.zero_stage << " tp " << plan.tp << " etp " << plan.etp << " ep " << plan.ep;
    allowed_with_ep += accepted && plan.ep > 1;
    refused_folded += !accepted && plan.expert_tp_folded();
    refused_fsdp += !accepted && plan.zero_stage == 3;
  });
  // The grid has each kind: expert parallelism overlapping its buckets,
  // expert TP below tp and FSDP refusing the key.
  EXPECT_GT(allowed_with_ep, 0);
  EXPECT_GT(refused_folded, 0);
  EXPECT_GT(refused_fsdp, 0);
}

TEST(GradientOverlapRules, TheLoaderAcceptsOverlapParamGatherExactlyWhereThePredicateAllowsIt) {
  int allowed = 0, refused_with_ep = 0;
  for_each_moe_plan([&](const ModelSpec& model, ParallelPlan plan) {
    plan.overlap_grad_reduce = true;
    if (!plan_problems(model, plan).empty())
      return;
    plan.overlap_param_gather = true;
    const bool accepted = plan_problems(model, plan).empty();
    EXPECT_EQ(accepted, overlap_param_gather_allowed(plan))
        << "zero " << plan.zero_stage << " tp " << plan.tp << " etp " << plan.etp << " ep " << plan.ep;
    allowed += accepted;
    refused_with_ep += !accepted && plan.ep > 1;
  });
  EXPECT_GT(allowed, 0);
  EXPECT_GT(refused_with_ep, 0);
}

}  // namespace
}  // namespace trainsim::workloads
