// Heterogeneous-cluster plans: an uneven layer partition (plan.stage_layers)
// scales each stage's compute in exact proportion to its layers, uneven DP
// micro-batch shares (plan.dp_micro_batches) give each replica its own
// schedule, and the balance search (workloads/stage_balance) beats the even
// split on a mixed cluster and keeps it where nothing beats it.
#include <gtest/gtest.h>

#include <boost/range/iterator_range.hpp>
#include <map>

#include "support/test_cluster.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/planning/stage_balance.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec gpt_24_layers() {
  auto model = *find_model_preset("gpt3-1.3b");
  model.layers = 24;
  return model;
}

// One-GPU nodes on a free network: the first `a100` GPUs are A100s, the
// next `h100` H100s.
platforms::ClusterSpec mixed_cluster(int a100, int h100) {
  platforms::ClusterSpec cluster;
  for (auto [name, nodes] : {std::pair{"A100-SXM-80GB", a100}, std::pair{"H100-SXM", h100}}) {
    if (nodes == 0)
      continue;
    auto group = testing::free_network_cluster(1).groups.front();
    group.gpu = *platforms::find_gpu(name);
    group.nodes = nodes;
    cluster.groups.push_back(group);
  }
  return cluster;
}

// First forward of every stage (dp 0, micro-batch 0) by stage.
std::map<int, double> forward_by_stage(const TaskGraph& graph) {
  std::map<int, double> out;
  for (auto v : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
    const Task& t = graph[v];
    if (t.kind == TaskKind::forward && t.micro_batch == 0 && !out.contains(t.stage))
      out[t.stage] = t.duration_s;
  }
  return out;
}

TEST(StageLayers, UnevenPartitionScalesStageComputeInExactProportion) {
  // The analytic model: FLOPs / (peak x efficiency), no embedding FLOPs, so
  // a stage's forward is its layers' FLOPs (plus the logits on the last).
  const auto model = gpt_24_layers();
  ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 4};
  plan.stage_layers = {9, 3, 7, 5};
  const AnalyticCostModel cost(model, plan, 0.5);
  const auto cluster = testing::free_network_cluster(4);
  const auto f = forward_by_stage(build_iteration(model, plan, cluster, cost));
  const auto& gpu = cluster.gpu_of(0);
  const double layer_s = model.layer_forward_flops(1) / (gpu.peak_bf16_flops * 0.5);
  const double logits_s = model.logits_forward_flops(1) / (gpu.peak_bf16_flops * 0.5);
  EXPECT_DOUBLE_EQ(f.at(0), 9 * layer_s);
  EXPECT_DOUBLE_EQ(f.at(1), 3 * layer_s);
  EXPECT_DOUBLE_EQ(f.at(2), 7 * layer_s);
  EXPECT_DOUBLE_EQ(f.at(3), 5 * layer_s + logits_s);
  EXPECT_DOUBLE_EQ(f.at(0) / f.at(1), 3.0);
}

TEST(StageLayers, PerOpModelStagesScaleWithTheirLayers) {
  const auto model = gpt_24_layers();
  ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 4};
  plan.stage_layers = {6, 8, 4, 6};
  const PerOpCostModel cost(model, plan);
  const auto f = forward_by_stage(build_iteration(model, plan, testing::free_network_cluster(4), cost));
  EXPECT_NEAR(f.at(1) / f.at(2), 2.0, 1e-12);
}

TEST(StageLayers, ModelFlopsAndLayerIndicesAddUpToTheWholeModel) {
  const auto model = gpt_24_layers();
  ParallelPlan even{.dp = 2, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 8};
  even.zero_stage = 3;  // FSDP splits every op per layer: layer indices must cover 0..23 once per op
  ParallelPlan uneven = even;
  uneven.stage_layers = {2, 10, 5, 7};
  const AnalyticCostModel cost(model, even, 0.5);
  const auto cluster = testing::free_network_cluster(8);
  auto flops = [&](const ParallelPlan& plan, std::map<int, int>& layers_seen) {
    double total = 0;
    const auto graph = build_iteration(model, plan, cluster, cost);
    for (auto v : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
      const Task& t = graph[v];
      total += t.model_flops;
      if (t.kind == TaskKind::forward && t.micro_batch == 0 && t.gpu < 8 && plan.dp_rank_of(t.gpu) == 0)
        ++layers_seen[t.layer];
    }
    return total;
  };
  std::map<int, int> even_layers, uneven_layers;
  EXPECT_NEAR(flops(uneven, uneven_layers) / flops(even, even_layers), 1.0, 1e-12);
  EXPECT_EQ(uneven_layers, even_layers);
  EXPECT_EQ(uneven_layers.size(), 24u);
}

TEST(StageLayers, MemoryFollowsEachStagesLayers) {
  const auto model = gpt_24_layers();
  ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 4};
  plan.stage_layers = {6, 9, 3, 6};
  const GpuMemoryModel memory(model, plan);
  EXPECT_DOUBLE_EQ(memory.parameters(1), 9 * model.layer_parameters());
  EXPECT_DOUBLE_EQ(memory.parameters(2), 3 * model.layer_parameters());
  EXPECT_DOUBLE_EQ(memory.stored_activations(1) / memory.stored_activations(2), 3.0);
}

TEST(DpMicroBatches, EachReplicaRunsItsOwnShare) {
  const auto model = gpt_24_layers();
  ParallelPlan plan{.dp = 2, .tp = 1, .pp = 2, .micro_batch_size = 2, .global_batch_size = 16};
  plan.dp_micro_batches = {5, 3};
  const auto graph =
      build_iteration(model, plan, testing::free_network_cluster(4), testing::FixedCostModel(1e-3, 2e-3));
  std::map<int, int> forwards_per_gpu;
  int all_reduces = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
    const Task& t = graph[v];
    if (t.kind == TaskKind::forward)
      ++forwards_per_gpu[t.gpu];
    if (t.kind == TaskKind::collective && t.comm == CommKind::dp)
      ++all_reduces;
  }
  // GPUs 0 (stage 0) and 2 (stage 1) are replica 0; 1 and 3 replica 1.
  EXPECT_EQ(forwards_per_gpu, (std::map<int, int>{{0, 5}, {1, 3}, {2, 5}, {3, 3}}));
  EXPECT_EQ(all_reduces, 2);  // one per stage, over both replicas
}

TEST(DpMicroBatches, BucketedReductionWaitsForEachReplicasLastBackward) {
  const auto model = gpt_24_layers();
  ParallelPlan plan{.dp = 2, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 6};
  plan.dp_micro_batches = {4, 2};
  plan.overlap_grad_reduce = true;
  plan.grad_bucket_bytes = 1;  // a bucket per layer
  EXPECT_NO_THROW(
      build_iteration(model, plan, testing::free_network_cluster(4), testing::FixedCostModel(1, 2)));
}

TEST(DpMicroBatches, BuilderRefusesSharesThatDoNotAddUp) {
  const auto model = gpt_24_layers();
  ParallelPlan plan{.dp = 2, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 6};
  plan.dp_micro_batches = {4, 3};
  EXPECT_THROW(build_iteration(model, plan, testing::free_network_cluster(4), testing::FixedCostModel(1, 2)),
               std::invalid_argument);
}

TEST(BalanceSearch, PutsMoreLayersOnTheFasterGpusOfAMixedPipeline) {
  const auto model = gpt_24_layers();
  const ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 16};
  const PerOpCostModel cost(model, plan);
  const auto found = balance_stages(model, plan, mixed_cluster(2, 2), cost);
  EXPECT_EQ(found.even.stage_layers, (std::vector<int>{6, 6, 6, 6}));
  const auto& l = found.balanced.stage_layers;
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0] + l[1] + l[2] + l[3], 24);
  EXPECT_LT(l[0] + l[1], l[2] + l[3]);  // stages 0-1 on A100s, 2-3 on H100s
  EXPECT_LT(l[0], 6);
  EXPECT_LT(l[1], 6);
  EXPECT_LT(found.balanced.estimated_iteration_s, 0.85 * found.even.estimated_iteration_s);
  EXPECT_FALSE(found.searched_dp_shares);
  // Its estimate is the estimate of the partition it names.
  EXPECT_DOUBLE_EQ(found.balanced.estimated_iteration_s,
                   estimate_iteration_s(model, plan, mixed_cluster(2, 2), cost, l, {16}));
}

TEST(BalanceSearch, GivesFasterReplicasMoreMicroBatches) {
  const auto model = gpt_24_layers();
  // dp 2 x pp 2 in Megatron's order: replica 0 is GPUs 0 and 2 (A100s),
  // replica 1 GPUs 1 and 3 (H100s).
  platforms::ClusterSpec cluster;
  for (const char* name : {"A100-SXM-80GB", "H100-SXM", "A100-SXM-80GB", "H100-SXM"}) {
    auto group = testing::free_network_cluster(1).groups.front();
    group.gpu = *platforms::find_gpu(name);
    group.nodes = 1;
    cluster.groups.push_back(group);
  }
  const ParallelPlan plan{.dp = 2, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 32};
  const PerOpCostModel cost(model, plan);
  const auto found = balance_stages(model, plan, cluster, cost);
  EXPECT_TRUE(found.searched_dp_shares);
  EXPECT_EQ(found.balanced.dp_micro_batches[0] + found.balanced.dp_micro_batches[1], 32);
  EXPECT_GT(found.balanced.dp_micro_batches[1], found.balanced.dp_micro_batches[0] + 4);
  EXPECT_LT(found.balanced.estimated_iteration_s, 0.85 * found.even.estimated_iteration_s);
}

TEST(BalanceSearch, KeepsTheEvenSplitOnAHomogeneousClusterWhenNothingBeatsIt) {
  // A wide model (logits < one layer): moving a layer off the last stage
  // only makes another stage the slowest, so the even split is optimal.
  auto model = *find_model_preset("gpt3-175b");
  model.layers = 16;
  const ParallelPlan plan{.dp = 2, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 16};
  const PerOpCostModel cost(model, plan);
  const auto found = balance_stages(model, plan, mixed_cluster(8, 0), cost);
  EXPECT_EQ(found.balanced.stage_layers, found.even.stage_layers);
  EXPECT_EQ(found.balanced.dp_micro_batches, found.even.dp_micro_batches);
  EXPECT_EQ(found.balanced.estimated_iteration_s, found.even.estimated_iteration_s);
  EXPECT_FALSE(found.searched_dp_shares);
}

TEST(BalanceSearch, IsDeterministicAndHonoursCaps) {
  const auto model = gpt_24_layers();
  const ParallelPlan plan{.dp = 1, .tp = 1, .pp = 4, .micro_batch_size = 1, .global_batch_size = 16};
  const PerOpCostModel cost(model, plan);
  const auto a = balance_stages(model, plan, mixed_cluster(2, 2), cost);
  const auto b = balance_stages(model, plan, mixed_cluster(2, 2), cost);
  EXPECT_EQ(a.balanced.stage_layers, b.balanced.stage_layers);
  const std::vector<int> caps{24, 24, 7, 24};
  const auto capped = balance_stages(model, plan, mixed_cluster(2, 2), cost, caps);
  EXPECT_LE(capped.balanced.stage_layers[2], 7);
}

TEST(BalanceSearch, InterleavedSharesStayMultiplesOfPp) {
  const auto model = gpt_24_layers();
  platforms::ClusterSpec cluster;
  for (const char* name : {"A100-SXM-80GB", "H100-SXM", "A100-SXM-80GB", "H100-SXM"}) {
    auto group = testing::free_network_cluster(1).groups.front();
    group.gpu = *platforms::find_gpu(name);
    cluster.groups.push_back(group);
  }
  ParallelPlan plan{.dp = 2, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 32};
  plan.schedule = ScheduleKind::interleaved_one_f_one_b;
  plan.virtual_stages = 2;
  const PerOpCostModel cost(model, plan);
  const auto found = balance_stages(model, plan, cluster, cost);
  ASSERT_EQ(found.balanced.stage_layers.size(), 4u);
  for (int m : found.balanced.dp_micro_batches)
    EXPECT_EQ(m % 2, 0);
}

}  // namespace
}  // namespace trainsim::workloads
