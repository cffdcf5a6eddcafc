// The size guard counts a plan's timeline records on its task graph built
// with fewer data-parallel replicas (sim/scenario/replica_record_count.hpp)
// instead of guessing them from a formula that missed split ops 5-10x.
#include "sim/scenario/replica_record_count.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/scenario/cost_model_choice.hpp"
#include "sim/scenario/run_size.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::scenario {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr int kWhole = 1 << 20;  // count on the plan itself

Scenario shipped(const std::string& file, const std::vector<std::string>& overrides = {}) {
  return load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/" + file, overrides,
                       LoadOptions{.check_memory = false});
}

// Megatron-LM's weak-scaling rows (tests/fixtures/megatron_lm_weak_scaling.csv):
// interleaved with one layer per chunk, sequence parallel with TP overlap.
std::vector<std::string> megatron_row(int nodes, int layers, int hidden, int heads, int pp, int chunks,
                                      int batch) {
  return {"cluster.nodes=" + std::to_string(nodes),
          "model.layers=" + std::to_string(layers),
          "model.hidden=" + std::to_string(hidden),
          "model.heads=" + std::to_string(heads),
          "plan.tp=8",
          "plan.dp=48",
          "plan.pp=" + std::to_string(pp),
          "plan.schedule=interleaved_1f1b",
          "plan.virtual_stages=" + std::to_string(chunks),
          "plan.global_batch_size=" + std::to_string(batch)};
}
const std::string kMegatron = "scenarios/validation/megatron-lm-h100-weak-scaling.yaml";

TEST(ReplicaRecordCount, CountingOnTwoReplicasGivesTheWholeGraphsRecords) {
  for (const auto& overrides : std::vector<std::vector<std::string>>{
           {}, {"plan.zero_stage=3"}, {"plan.schedule=interleaved_1f1b", "plan.virtual_stages=3"}}) {
    const Scenario s = shipped("scenarios/scale-512.yaml", overrides);
    const auto shrunk = counted_iteration_records(s, 0);
    const auto whole = counted_iteration_records(s, kWhole);
    ASSERT_TRUE(shrunk && whole);
    EXPECT_DOUBLE_EQ(*shrunk, *whole) << testing::PrintToString(overrides);
  }
}

// What the builder reserves at scale (sim/replay/simulation.cpp): the line
// through two shrunk graphs' counts must be the whole graph's, count for
// count, or a vector grows by doubling after all.
TEST(ReplicaRecordCount, TheGraphCountsOnALineThroughTwoShrunkPlansAreTheWholeGraphs) {
  for (const auto& overrides : std::vector<std::vector<std::string>>{
           {},
           {"plan.zero_stage=3"},
           {"plan.schedule=interleaved_1f1b", "plan.virtual_stages=3"},
           {"plan.overlap_grad_reduce=true", "plan.zero_stage=1", "plan.overlap_param_gather=true"}}) {
    const Scenario s = shipped("scenarios/scale-512.yaml", overrides);
    ASSERT_GE(s.plan.dp, 8);
    const auto counted = counted_graph_counts(s);
    ASSERT_TRUE(counted) << testing::PrintToString(overrides);
    const auto cost = make_cost_model(s);
    const auto whole = workloads::build_iteration(s.model, s.plan, s.cluster, *cost).counts();
    EXPECT_EQ(counted->tasks, whole.tasks) << testing::PrintToString(overrides);
    EXPECT_EQ(counted->dependencies, whole.dependencies) << testing::PrintToString(overrides);
    EXPECT_EQ(counted->memory_events, whole.memory_events) << testing::PrintToString(overrides);
    EXPECT_GT(whole.memory_events, 0U);
  }
  // HSDP keeps two shard groups in each shrunk plan.
  const Scenario hsdp = shipped("scenarios/scale-16k-hsdp-70b.yaml",
                                {"cluster.nodes=16", "plan.dp=16", "plan.dp_shard=2", "model.layers=4",
                                 "plan.global_batch_size=16", "cluster.fabric.nodes_per_leaf=2"});
  const auto counted = counted_graph_counts(hsdp);
  ASSERT_TRUE(counted);
  const auto cost = make_cost_model(hsdp);
  EXPECT_EQ(*counted, workloads::build_iteration(hsdp.model, hsdp.plan, hsdp.cluster, *cost).counts());
}

TEST(ReplicaRecordCount, HybridShardingKeepsTwoShardGroupsAndCountsExactly) {
  // HSDP: shard groups of 2 replicas; one group would lose the all-reduce
  // across groups.
  const Scenario s = shipped("scenarios/scale-16k-hsdp-70b.yaml",
                             {"cluster.nodes=16", "plan.dp=16", "plan.dp_shard=2", "model.layers=4",
                              "plan.global_batch_size=16", "cluster.fabric.nodes_per_leaf=2"});
  const auto shrunk = counted_iteration_records(s, 0);
  const auto whole = counted_iteration_records(s, kWhole);
  ASSERT_TRUE(shrunk && whole);
  EXPECT_DOUBLE_EQ(*shrunk, *whole);
}

TEST(ReplicaRecordCount, MatchesTheTimelineRowsScale512Writes) {
  // docs/reliability.md "Size guard": scale-512's timeline.csv has 95k rows,
  // 1.04M with ZeRO-3 (the formula said 1.5e5 and 1.1e6).
  EXPECT_NEAR(*counted_iteration_records(shipped("scenarios/scale-512.yaml")), 95e3, 3e3);
  EXPECT_NEAR(*counted_iteration_records(shipped("scenarios/scale-512.yaml", {"plan.zero_stage=3"})), 1.04e6,
              0.03e6);
}

TEST(ReplicaRecordCount, TheInterleavedTpOverlapRowsAreEstimatedAboveWhatTheyTook) {
  // Megatron-LM's 70B row ran unfolded in 2.79 GiB and 119B's passed 4 GiB
  // (its graph alone ~6 GiB); the formula said 323 MiB and 552 MiB, so
  // `--max-memory 4GiB` let them start (docs/calibration.md, 2026-12-06).
  const RunSize r70 = estimate_run_size(shipped(kMegatron, megatron_row(96, 84, 8192, 64, 2, 42, 384)));
  const RunSize r119 = estimate_run_size(shipped(kMegatron, megatron_row(192, 92, 10240, 80, 4, 23, 768)));
  EXPECT_TRUE(r70.records_counted);
  EXPECT_GT(r70.memory_bytes / kGiB, 2.79);
  EXPECT_LT(r70.memory_bytes / kGiB, 3 * 2.79);
  EXPECT_GT(r119.memory_bytes / kGiB, 6);
}

TEST(ReplicaRecordCount, SeveralNodeGroupsKeepTheFormula) {
  const Scenario s = shipped("scenarios/hetero-a100-h100.yaml");
  EXPECT_FALSE(counted_iteration_records(s, 0));
  EXPECT_FALSE(estimate_run_size(s).records_counted);
}

// DeepSeek-V3's layout (moe-deepseek-v3.yaml: PP 16, DP 128, EP 64 over 8
// nodes of 8) with 16 micro-batches per replica: every stage holds MoE
// layers, so each of its 2 EP groups runs one exchange per forward and one
// per backward of each micro-batch, 16 x 2 x 16 x 2 = 1,024 exchanges; an
// all_to_all moves one flow per ordered pair, 64 x 63; deepep's relay 64 x 7
// over RDMA and 64 x 7 over NVLink.
TEST(ReplicaRecordCount, ExpertExchangesCountEveryPairOfAnAllToAllAndDeepepsRelayedEdges) {
  const auto a2a =
      counted_iteration(shipped("scenarios/moe-deepseek-v3.yaml", {"plan.global_batch_size=2048"}));
  ASSERT_TRUE(a2a);
  EXPECT_DOUBLE_EQ(a2a->exchange_flows, 1024.0 * 64 * 63);
  const auto deepep = counted_iteration(shipped(
      "scenarios/moe-deepseek-v3.yaml", {"plan.global_batch_size=2048", "plan.moe_dispatcher=deepep"}));
  ASSERT_TRUE(deepep);
  EXPECT_DOUBLE_EQ(deepep->exchange_flows, 1024.0 * (64 * 7 + 64 * 7));
  EXPECT_EQ(counted_iteration(shipped("scenarios/scale-512.yaml"))->exchange_flows, 0);
}

// The shipped layout's 120 micro-batches per replica on 1,024 GPUs (the
// smallest valid replica count, DP 64) are beyond the counting budget: the
// graph is counted with 40 and scaled by 3, where the formula said 5.9e5
// records and no exchange flow (a run that passed 1.26 GiB after 248 s of
// CPU was estimated at 581 MiB and 4 s). Per micro-batch the count is the
// 16-micro-batch layout's.
TEST(ReplicaRecordCount, APlanBeyondTheBudgetIsCountedOnFewerMicroBatches) {
  const auto full = counted_iteration(shipped("scenarios/moe-deepseek-v3.yaml"));
  const auto small =
      counted_iteration(shipped("scenarios/moe-deepseek-v3.yaml", {"plan.global_batch_size=2048"}));
  ASSERT_TRUE(full && small);
  EXPECT_DOUBLE_EQ(full->exchange_flows, small->exchange_flows * 120 / 16);
  EXPECT_NEAR(full->records, small->records * 120 / 16, 0.02 * full->records);
  const RunSize size = estimate_run_size(shipped("scenarios/moe-deepseek-v3.yaml"), 1, 0);
  EXPECT_TRUE(size.records_counted);
  EXPECT_GT(size.memory_bytes / kGiB, 1.26);
  EXPECT_GT(size.replay_s, 248);
}

}  // namespace
}  // namespace trainsim::scenario
