// The plan search (sim/study/plan_search.hpp) carries the base scenario's
// gradient-reduction overlaps to the candidates the scenario loader lets
// have them (workloads/plan_checks.hpp): expert-parallel plans keep
// overlap_grad_reduce (dense and expert buckets during the backward), plans
// with expert TP below tp drop it with the base's bucket size, and the
// overlapped parameter gather stays on the plans without expert
// parallelism. Nothing is simulated: the search checks and estimates, and
// each plan's scenario loads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platforms/input_error.hpp"
#include "sim/scenario/document.hpp"
#include "sim/study/plan_search.hpp"
#include "workloads/plan_checks.hpp"

namespace trainsim::sim {
namespace {

// Mixtral 8x7B shrunk to 2 layers (8 experts) on two DGX H100s, one stage,
// micro-batch 1, no recomputation: tp 1 / 2, ZeRO 0 / 1, sequence
// parallelism, expert parallelism and expert TP searched.
PlanSearch small_moe_search(std::vector<std::string> extra) {
  PlanSearchRequest request;
  request.model = "mixtral-8x7b";
  request.cluster = "dgx-h100-ndr";
  request.gpus = 16;
  request.global_batch_size = 32;
  request.overrides = {"model.layers=2",          "plan.pp=1",
                       "plan.zero_stage=[0,1]",   "plan.recompute=none",
                       "plan.micro_batch_size=1", "plan.tp=[1,2]"};
  request.overrides.insert(request.overrides.end(), extra.begin(), extra.end());
  return prepare_plan_search(request);
}

std::size_t invalid(const PlanSearch& search) {
  return search.pruned[static_cast<std::size_t>(workloads::PruneReason::invalid_plan)];
}

TEST(PlanSearchOverlap, ExpertParallelPlansKeepTheBasesGradientOverlapAndFoldedExpertTpDropsIt) {
  const PlanSearch search = small_moe_search({"plan.overlap_grad_reduce=true", "plan.grad_bucket_size=40MB"});
  int with_ep = 0, folded = 0;
  for (const auto& c : search.ranked) {
    const bool allowed = !c.plan.expert_tp_folded();
    EXPECT_EQ(c.plan.overlap_grad_reduce, allowed) << c.key;
    EXPECT_EQ(c.plan.grad_bucket_bytes, allowed ? 40e6 : 0.0) << c.key;
    with_ep += c.plan.ep > 1 && c.plan.overlap_grad_reduce;
    folded += c.plan.expert_tp_folded();
    // The plan's scenario says the same (a folded plan loads without the
    // bucket size, which the loader refuses without the overlap).
    const std::string yaml = scenario_yaml(search, c);
    EXPECT_EQ(yaml.find("overlap_grad_reduce: true") != std::string::npos, allowed) << c.key;
    EXPECT_EQ(yaml.find("grad_bucket_size") != std::string::npos, allowed) << c.key;
    try {
      const auto loaded =
          scenario::load_scenario_document(YAML::Load(yaml), platforms::InputSource("plan.yaml"),
                                           scenario::LoadOptions{.check_memory = false});
      EXPECT_EQ(loaded.plan.overlap_grad_reduce, allowed) << c.key;
    } catch (const platforms::InputError& e) {
      ADD_FAILURE() << c.key << ": " << e.what();
    }
  }
  EXPECT_GT(with_ep, 0);
  EXPECT_GT(folded, 0);
  // Every plan of the space loaded with its overlap, or without it.
  EXPECT_EQ(invalid(search), 0u) << (search.invalid_examples.empty() ? "" : search.invalid_examples.front());
}

TEST(PlanSearchOverlap, TheOverlappedParameterGatherStaysOnThePlansWithoutExpertParallelism) {
  const PlanSearch search = small_moe_search(
      {"plan.zero_stage=1", "plan.overlap_grad_reduce=true", "plan.overlap_param_gather=true"});
  int gathers = 0, reduces_with_ep = 0;
  for (const auto& c : search.ranked) {
    EXPECT_EQ(c.plan.overlap_param_gather, c.plan.ep == 1 && !c.plan.expert_tp_folded()) << c.key;
    EXPECT_EQ(c.plan.overlap_param_gather, workloads::overlap_param_gather_allowed(c.plan)) << c.key;
    gathers += c.plan.overlap_param_gather;
    reduces_with_ep += c.plan.ep > 1 && c.plan.overlap_grad_reduce;
  }
  EXPECT_GT(gathers, 0);
  EXPECT_GT(reduces_with_ep, 0);
  EXPECT_EQ(invalid(search), 0u) << (search.invalid_examples.empty() ? "" : search.invalid_examples.front());
}

}  // namespace
}  // namespace trainsim::sim
