// The estimate printed before an expensive run counts what the replay will
// simulate exactly: the flows it counts are the flows the replay records,
// at either fidelity. One TEST = one simulation (one engine per process).
#include <gtest/gtest.h>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/replay_cost.hpp"
#include "sim/replay/replica_fold.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/scenario/scenario.hpp"
#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/model_spec.hpp"

namespace trainsim::sim {
namespace {

struct Counted {
  ReplayCost cost;
  std::size_t recorded_flows = 0;
  std::size_t tasks = 0;
  std::size_t progress_reports = 0;
  ReplayProgress last;
};

// GPT-3 1.3B over 2 nodes of 4 GPUs: dp 2 x tp 2 x pp 2, 8 micro-batches.
Counted replay_and_count(platforms::Fidelity fidelity) {
  const auto model = *workloads::find_model_preset("gpt3-1.3b");
  workloads::ParallelPlan plan;
  plan.dp = 2;
  plan.tp = 2;
  plan.pp = 2;
  plan.micro_batch_size = 2;
  plan.global_batch_size = 32;
  auto cluster = testing::uniform_cluster(2, 4, 100e9, 5e-6);
  cluster.collectives.fidelity = fidelity;
  const testing::FixedCostModel cost(1e-3, 2e-3);
  const auto graph = workloads::build_iteration(model, plan, cluster, cost);
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  Counted c;
  c.cost = estimate_replay_cost(graph, *zone, 1);
  ReplayOptions options;
  options.on_progress = [&c](const ReplayProgress& p) {
    ++c.progress_reports;
    c.last = p;
  };
  const auto replayed = replay(graph, *zone, options);
  c.recorded_flows = replayed.timeline.flows.size();
  c.tasks = graph.size();
  return c;
}

TEST(ReplayCost, CountsTheFlowsOfADetailedReplayExactly) {
  const auto c = replay_and_count(platforms::Fidelity::detailed);
  EXPECT_EQ(c.cost.tasks, c.tasks);
  EXPECT_EQ(c.cost.flows, c.recorded_flows);
  EXPECT_EQ(c.cost.recorded_flows, c.recorded_flows);
  EXPECT_LT(c.cost.fast_flows, c.cost.flows);  // fast: one flow per ring edge
  EXPECT_TRUE(c.cost.detailed);
  EXPECT_GT(c.cost.time_s, c.cost.fast_time_s);
  EXPECT_GT(c.cost.memory_bytes, 0);
  // The progress reports count up to what the estimate said.
  EXPECT_GT(c.progress_reports, 0u);
  EXPECT_EQ(c.last.tasks_total, c.tasks);
  EXPECT_LE(c.last.tasks_done, c.tasks);
  EXPECT_LE(c.last.flows_done, c.recorded_flows);
}

TEST(ReplayCost, CountsTheFlowsOfAFastReplayExactly) {
  const auto c = replay_and_count(platforms::Fidelity::fast);
  EXPECT_EQ(c.cost.flows, c.recorded_flows);
  EXPECT_EQ(c.cost.fast_flows, c.cost.flows);
  EXPECT_EQ(c.cost.recorded_flows, c.recorded_flows);
  EXPECT_FALSE(c.cost.detailed);
}

TEST(ReplayCost, EstimatesAnAutomaticReplayAtTheFastCountNotEveryRingStep) {
  // Automatic collectives run without flows unless displaced: counting their
  // detailed flows made the 16k-GPU note say ~27 min for a one-minute run.
  const auto c = replay_and_count(platforms::Fidelity::automatic);
  EXPECT_EQ(c.cost.flows, c.cost.fast_flows);
  EXPECT_FALSE(c.cost.detailed);
  EXPECT_EQ(c.cost.tasks, c.tasks);
  // But every detailed step is recorded, computed alone or not: the count
  // the records are allocated for.
  EXPECT_GT(c.cost.recorded_flows, c.cost.flows);
  EXPECT_EQ(c.cost.recorded_flows, c.recorded_flows);
}

TEST(ReplayCost, AFoldedRunIsCountedWholeFromItsRepresentativesAndEstimatedAtWhatTheFoldHolds) {
  // scenarios/scale-512.yaml folds its 8 replicas in classes of 2 (fat-tree,
  // 4 nodes per leaf; docs/performance.md, "The fold"). Counted from the
  // representatives, the flows are the whole run's; the memory is what the
  // folded run holds (the size guard's folded estimate), not every expanded
  // record: the note said ~16.9 GiB for scale-16k-hsdp-70b, which holds 6.9.
  const auto s = scenario::load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/scale-512.yaml",
                                         {"model.layers=16"});
  const auto graph = build_task_graph(s);
  auto engine = make_engine();
  auto* zone = new ClusterZone(s.cluster);
  const ReplayCost whole = estimate_replay_cost(graph, *zone, 1);
  const FoldDecision decision = plan_replica_fold(graph, s, *zone);
  ASSERT_TRUE(decision.fold.has_value()) << decision.summary.stopped;
  ASSERT_EQ(decision.fold->order, 2);
  ASSERT_LT(decision.fold->simulated_count, graph.size());
  const ReplayCost folded = estimate_replay_cost(graph, *zone, 1, *decision.fold, s);
  EXPECT_EQ(folded.tasks, whole.tasks);
  EXPECT_GT(folded.flows, 0u);
  EXPECT_EQ(folded.flows, whole.flows);
  EXPECT_EQ(folded.fast_flows, whole.fast_flows);
  EXPECT_EQ(folded.recorded_flows, whole.recorded_flows);
  // The time is the quotient's replay (the representatives' tasks on 1/m of
  // the GPUs, 1/m of the flows) plus a cost per task of the whole run, less
  // than the full replay's: scale-131k was estimated at ~8 min whole and
  // runs in ~47 s folded (docs/performance.md, "Towards 1,048,576 GPUs").
  EXPECT_DOUBLE_EQ(folded.time_s,
                   estimated_folded_replay_time_s(decision.fold->simulated_count, whole.flows / 2,
                                                  graph.gpu_count / 2, graph.size()));
  EXPECT_LT(folded.time_s, whole.time_s);
  EXPECT_LT(folded.fast_time_s, whole.fast_time_s);
  const auto held = scenario::estimate_folded_run_size(s, 1);
  EXPECT_TRUE(held.folded);
  EXPECT_DOUBLE_EQ(folded.memory_bytes, held.memory_bytes);
  // Never above the run unfolded (equal here: a run this small is mostly
  // the folded estimate's base).
  EXPECT_LE(folded.memory_bytes, scenario::estimate_run_size(s, 1, 0).memory_bytes);
}

TEST(ReplayCost, TheMemoryNoteIsOneAndAFifthToTwoTimesThePeakMeasuredUnfolded) {
  // Peak RSS of `trainsim run` unfolded, 2026-12-06 13:38-14:00 with the
  // task graph in compressed rows (KiB from /usr/bin/time), against the
  // note's estimate from the run's tasks and recorded flows (summary.json's
  // task_count and utilization.flows; docs/reliability.md, "Size guard").
  // The 2026-12-02 fit (710 B per task, 56 per recorded flow) read 0.68x
  // on DeepSeek-V3, whose all-to-all flows across nodes are most of its
  // memory.
  struct Measured {
    const char* run;
    std::size_t tasks, recorded_flows;
    double peak_KiB;
  };
  const Measured runs[] = {
      {"quickstart", 1180, 1456, 42008},
      {"zero-fsdp", 1136, 184320, 55444},
      {"moe-mixtral", 1960, 8384, 43540},
      {"scale-512", 66176, 494848, 93148},
      {"perturb-falcon-stragglers", 62752, 58880, 77908},
      {"scale-512 with ZeRO-3", 500288, 4616448, 521568},
      {"perturb-mtbf-checkpoints", 1098880, 1034240, 585888},
      {"scale-16k", 1163392, 11993088, 1231576},
      {"scale-16k-hsdp-70b with 8 layers", 301056, 29163520, 2285864},
      {"moe-deepseek-v3 with 16 micro-batches per replica", 132256, 8356352, 886920},
  };
  for (const auto& r : runs) {
    const double ratio = estimated_replay_memory_bytes(r.tasks, r.recorded_flows) / (r.peak_KiB * 1024);
    EXPECT_GE(ratio, 1.15) << r.run;
    EXPECT_LE(ratio, 2.0) << r.run;
  }
}

}  // namespace
}  // namespace trainsim::sim
