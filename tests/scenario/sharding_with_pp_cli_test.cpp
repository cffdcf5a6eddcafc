// Sharding with pipeline stages as the large runs do it (issue 34 item 2),
// through the CLI: FSDP that keeps each layer gathered for the iteration and
// reduce-scatters its gradients once (Llama 3's choice, PyTorch's pipelining
// schedules) against FSDP that gathers and reduces every micro-batch, on
// the quickstart's pipeline (GPT-3 1.3B, tp 2 x pp 4 x dp 2, 16
// micro-batches).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {

TEST(ShardingWithPipelineStages, GatheringOnceAndReducingOnceCutsTheTrafficAndHoldsMoreMemory) {
  const std::vector<std::string> fsdp = {"run", "scenarios/quickstart.yaml", "--set", "plan.zero_stage=3"};
  auto llama = fsdp;
  for (const char* set :
       {"plan.reshard_after_forward=false", "plan.grad_reduce=per_step", "plan.grad_allreduce_dtype=fp32"}) {
    llama.push_back("--set");
    llama.push_back(set);
  }
  const auto every = run_summary(fsdp);
  const auto once = run_summary(llama);
  ASSERT_FALSE(every.empty());
  ASSERT_FALSE(once.empty());
  EXPECT_EQ(once.at("plan").at("reshard_after_forward"), false);
  EXPECT_EQ(once.at("plan").at("grad_reduce"), "per_step");
  EXPECT_FALSE(every.at("plan").contains("reshard_after_forward"));
  // 16 micro-batches: the per-micro-batch FSDP gathers every layer twice
  // and reduces it once per micro-batch; the other once each per iteration.
  EXPECT_LT(once.at("iteration_time_s").get<double>(), every.at("iteration_time_s").get<double>());
  EXPECT_GT(once.at("peak_memory_bytes").get<double>(), every.at("peak_memory_bytes").get<double>());
}

TEST(ShardingWithPipelineStages, TheKeysAreRefusedWithoutShardedParametersOrGradients) {
  CliResult r;
  r = run_cli({"run", "scenarios/quickstart.yaml", "--quiet", "--out", fresh_dir("shard-bad").string(),
               "--set", "plan.zero_stage=1", "--set", "plan.grad_reduce=per_step", "--set",
               "plan.reshard_after_forward=false"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("plan.grad_reduce: per_step with zero_stage 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plan.reshard_after_forward: false with zero_stage 1"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::testing
