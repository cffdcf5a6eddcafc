// The parallelism options and the memory model replayed on SimGrid: what
// overlaps what, and memory over time against the static estimate. One
// simulation per test (one SimGrid engine per process).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "analysis/intervals.hpp"
#include "analysis/memory_curve.hpp"
#include "analysis/summary.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"

namespace trainsim::sim {
namespace {

using analysis::Stream;
using workloads::ParallelPlan;

struct Run {
  workloads::ModelSpec model;
  ParallelPlan plan;
  workloads::TaskGraph graph;
  analysis::Timeline timeline;
  analysis::Summary summary;
};

Run replay_plan(const ParallelPlan& plan, const platforms::ClusterSpec& cluster,
                const workloads::ModelSpec& model = *workloads::find_model_preset("gpt3-1.3b")) {
  Run run{model, plan, {}, {}, {}};
  const workloads::AnalyticCostModel cost(model, plan, 0.5);
  run.graph = workloads::build_iteration(model, plan, cluster, cost);
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  run.timeline = replay(run.graph, *zone);
  run.summary = analysis::summarize(run.graph, run.timeline, model, plan, cluster);
  return run;
}

// Busy intervals of one GPU's stream (all streams but compute: `stream`).
std::vector<analysis::Interval> busy(const Run& run, int gpu, Stream stream) {
  std::vector<analysis::Interval> out;
  for (const auto& r : run.timeline.records)
    if (r.gpu == gpu && r.stream == stream && r.end_s > r.start_s)
      out.emplace_back(r.start_s, r.end_s);
  return analysis::merge_intervals(std::move(out));
}

// Time `stream` is busy on `gpu` while the GPU computes nothing.
double exposed(const Run& run, int gpu, Stream stream) {
  const auto comm = busy(run, gpu, stream);
  return analysis::total_length(comm) - analysis::overlap_length(busy(run, gpu, Stream::compute), comm);
}

// GPT-3 1.3B, dp 4, one stage, 4 micro-batches, 200 MB buckets on a fast
// network (600 GB/s, 1 us): every bucket but the last finishes while the
// last backward still runs.
ParallelPlan bucket_plan(bool overlap) {
  ParallelPlan plan{.dp = 4, .micro_batch_size = 1, .global_batch_size = 16};
  plan.overlap_grad_reduce = overlap;
  plan.grad_bucket_bytes = overlap ? 25e6 * 8 : 0;
  return plan;
}

TEST(GradientBucketsReplay, OverlapHidesTheDataParallelAllReduceBehindTheBackward) {
  const auto run = replay_plan(bucket_plan(true), testing::uniform_cluster(1, 4, 600e9, 1e-6));
  std::vector<analysis::Interval> buckets;
  double backward_end = 0;
  for (const auto& r : run.timeline.records) {
    if (r.gpu != 0)
      continue;
    if (r.stream == Stream::dp_comm)
      buckets.emplace_back(r.start_s, r.end_s);
    if (run.graph[r.task].kind == workloads::TaskKind::backward)
      backward_end = std::max(backward_end, r.end_s);
  }
  // 24 layers of 50.4M parameters, two per 200 MB bucket.
  ASSERT_EQ(buckets.size(), 12u);
  std::sort(buckets.begin(), buckets.end());
  // Every bucket but the last (the first two layers and the embedding) is
  // done before the backward ends; only the last one shows.
  for (std::size_t k = 0; k + 1 < buckets.size(); ++k)
    EXPECT_LE(buckets[k].second, backward_end) << k;
  const double last = buckets.back().second - buckets.back().first;
  EXPECT_NEAR(exposed(run, 0, Stream::dp_comm), last, 1e-9);
  const double total = analysis::total_length(analysis::merge_intervals(buckets));
  EXPECT_LT(last, 0.25 * total);
}

TEST(GradientBucketsReplay, WithoutOverlapTheAllReduceIsExposedAfterTheBackward) {
  const auto run = replay_plan(bucket_plan(false), testing::uniform_cluster(1, 4, 600e9, 1e-6));
  const double total = analysis::total_length(busy(run, 0, Stream::dp_comm));
  ASSERT_GT(total, 0);
  EXPECT_NEAR(exposed(run, 0, Stream::dp_comm), total, 1e-12);
}

// 1F1B on a free network: transfers take no time, so the timed peak of
// every GPU is the static walk's, and stage 0 reaches it as its p-th
// forward ends.
TEST(MemoryCurveReplay, OneFOneBTimedPeakIsTheStaticEstimate) {
  ParallelPlan plan{.dp = 1, .tp = 2, .pp = 4, .micro_batch_size = 2, .global_batch_size = 8};
  const auto run = replay_plan(plan, testing::free_network_cluster(8));
  const auto estimate = workloads::estimate_memory(
      run.model, plan, workloads::make_schedule(plan.schedule, 4, plan.micro_batches()));
  const auto curves = analysis::memory_curves(run.graph, run.timeline);
  for (const auto& c : curves.gpus) {
    const auto& stage = estimate.stages[static_cast<std::size_t>(plan.pp_rank_of(c.gpu))];
    EXPECT_NEAR(c.peak_bytes, stage.peak_bytes, 1e-9 * stage.peak_bytes) << c.gpu;
    for (int k = 0; k < workloads::kMemoryKindCount; ++k)
      EXPECT_NEAR(c.at_peak.bytes[k], stage.at_peak.bytes[k], 1e-9 * stage.peak_bytes) << c.gpu << " " << k;
    // Back to the resident bytes at the end.
    EXPECT_NEAR(c.points().back().bytes, c.resident.total(), 1e-9 * c.resident.total());
  }
  double f3_end = -1;
  for (const auto& r : run.timeline.records)
    if (r.gpu == 0 && run.graph[r.task].kind == workloads::TaskKind::forward &&
        run.graph[r.task].micro_batch == 3)
      f3_end = r.end_s;
  EXPECT_DOUBLE_EQ(curves.gpus[0].peak_time_s, f3_end);
  EXPECT_EQ(curves.peak_gpu, 0);
  EXPECT_DOUBLE_EQ(run.summary.peak_memory_bytes, curves.peak_bytes);
  EXPECT_TRUE(run.summary.fits_in_memory);
}

// BPipe, p = 8: stage 0 holds 6 micro-batches instead of 1F1B's 8, and the
// activations it evicts (3 at most) appear on stage 7 while they are away. The static
// estimate bounds the acceptor from above (it charges the most ever away
// at the acceptor's own peak).
TEST(MemoryCurveReplay, BPipeTimedPeaksMatchTheEvictorAndStayUnderTheAcceptorBound) {
  ParallelPlan plan{.dp = 1, .tp = 1, .pp = 8, .micro_batch_size = 1, .global_batch_size = 16};
  plan.schedule = workloads::ScheduleKind::bpipe;
  const auto run = replay_plan(plan, testing::free_network_cluster(8));
  const auto estimate =
      workloads::estimate_memory(run.model, plan, workloads::make_bpipe(8, plan.micro_batches()));
  const auto curves = analysis::memory_curves(run.graph, run.timeline);
  const workloads::GpuMemoryModel memory(run.model, plan);
  const double stored0 = memory.stored_activations(0);
  // Evictions move the layers' activations; the embedding's dropout mask of
  // the two micro-batches away stays.
  const double mask = stored0 - memory.stored_activations(1);
  EXPECT_NEAR(curves.gpus[0].at_peak[workloads::MemoryKind::activations], 6 * stored0 + 2 * mask,
              1e-9 * stored0);
  EXPECT_NEAR(curves.gpus[0].peak_bytes, estimate.stages[0].peak_bytes, 1e-9 * stored0);
  const double layers = memory.stored_activations(1);  // a middle stage: layers only
  EXPECT_NEAR(curves.gpus[7].at_peak[workloads::MemoryKind::activations],
              memory.stored_activations(7) + 3 * layers, 1e-9 * layers);
  for (int gpu = 0; gpu < 8; ++gpu)
    EXPECT_LE(curves.gpus[gpu].peak_bytes, estimate.stages[gpu].peak_bytes * (1 + 1e-12)) << gpu;
}

// FSDP on a fast network: each layer's parameters arrive while the layer
// before computes, so little of the gathering shows, and at most two
// gathered layers are ever held.
TEST(FsdpReplay, PrefetchHidesTheGathersBehindCompute) {
  ParallelPlan plan{.dp = 4, .micro_batch_size = 1, .global_batch_size = 8};
  plan.zero_stage = 3;
  const auto run = replay_plan(plan, testing::uniform_cluster(1, 4, 600e9, 1e-6));
  const double total = analysis::total_length(busy(run, 0, Stream::dp_comm));
  ASSERT_GT(total, 0);
  EXPECT_LT(exposed(run, 0, Stream::dp_comm), 0.15 * total);
  const auto curves = analysis::memory_curves(run.graph, run.timeline);
  const workloads::GpuMemoryModel memory(run.model, plan);
  const double unit = memory.piece_parameters(0, 0);  // the largest: a layer and the embedding
  EXPECT_LE(curves.gpus[0].at_peak[workloads::MemoryKind::buffers], 2 * (2 * unit) + 2 * (2 * unit) + 1);
  EXPECT_GT(curves.gpus[0].at_peak[workloads::MemoryKind::buffers], 0);
}

// Hybrid sharding on 2 nodes of 4 GPUs (dp_shard 4): every all-gather and
// reduce-scatter flow stays inside a node, and only the shards' all-reduces
// cross it, each between the GPUs at the same position of both nodes.
TEST(FsdpReplay, HybridShardingKeepsTheGathersInsideTheNodeAndOnlyTheShardsAllReduceAcrossIt) {
  auto cluster = testing::uniform_cluster(2, 4, 300e9, 1e-6);
  cluster.groups.front().nic = {25e9, 2e-6};
  ParallelPlan plan{.dp = 8, .micro_batch_size = 1, .global_batch_size = 8};
  plan.zero_stage = 3;
  plan.dp_shard = 4;
  const auto run = replay_plan(plan, cluster);
  int inside = 0, across = 0;
  for (const auto& f : run.timeline.flows) {
    const auto op = run.graph[f.task].op;
    if (op == workloads::CollectiveOp::all_reduce) {
      EXPECT_NE(f.src_gpu / 4, f.dst_gpu / 4) << f.src_gpu << " -> " << f.dst_gpu;
      EXPECT_EQ(f.src_gpu % 4, f.dst_gpu % 4) << f.src_gpu << " -> " << f.dst_gpu;
      ++across;
    } else {
      EXPECT_EQ(f.src_gpu / 4, f.dst_gpu / 4) << f.src_gpu << " -> " << f.dst_gpu;
      ++inside;
    }
  }
  EXPECT_GT(inside, 0);
  EXPECT_GT(across, 0);
  // Weights, gradients and optimizer state over 4 GPUs: resident 16 / 4
  // bytes per parameter of the model on every GPU.
  const workloads::GpuMemoryModel memory(run.model, plan);
  EXPECT_DOUBLE_EQ(memory.resident(0).total(), 16.0 / 4 * memory.parameters(0));
}

// Ring attention at 32k tokens: the attention core outlasts the key/value
// exchange on NVLink-class links, so the exchange hides behind it.
TEST(ContextParallelReplay, RingExchangeRunsUnderTheAttentionCore) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.seq_len = 32768;
  ParallelPlan plan{.dp = 1, .micro_batch_size = 1, .global_batch_size = 1};
  plan.cp = 4;
  plan.recompute = workloads::Recompute::selective;
  const auto run = replay_plan(plan, testing::uniform_cluster(1, 4, 300e9, 2e-6), model);
  const double total = analysis::total_length(busy(run, 0, Stream::cp_comm));
  ASSERT_GT(total, 0);
  EXPECT_LT(exposed(run, 0, Stream::cp_comm), 0.05 * total);
  // Exchange records are the CP stream's; the attention parts run meanwhile.
  int attention = 0;
  for (const auto& r : run.timeline.records)
    attention += r.gpu == 0 && run.graph[r.task].attention;
  EXPECT_EQ(attention, 2);  // the forward's and the backward's
}

// Transformer Engine's userbuffers (plan.tp_comm_overlap) on GPT-3 1.3B, tp
// 4, one micro-batch, NVLink-class links with negligible latency: every
// GEMM chunk outlasts its share of the collectives, so each op exposes
// exactly its last chunk's communication, 1/tp of what it moves, and the
// GPU computes all the time it would without the overlap.
TEST(TpCommOverlapReplay, EachOpExposesOnlyItsLastChunksCommunication) {
  ParallelPlan plan{.dp = 1, .tp = 4, .micro_batch_size = 1, .global_batch_size = 1};
  plan.sequence_parallel = true;
  plan.tp_comm_overlap = workloads::TpCommOverlap::userbuffers;
  const auto run = replay_plan(plan, testing::uniform_cluster(1, 4, 300e9, 1e-12));
  const double total = analysis::total_length(busy(run, 0, Stream::tp_comm));
  ASSERT_GT(total, 0);
  EXPECT_NEAR(exposed(run, 0, Stream::tp_comm), total / plan.tp, 1e-6 * total);
  double compute_s = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(run.graph.dependencies())))
    if (workloads::is_compute(run.graph[v].kind) && run.graph[v].gpu == 0)
      compute_s += run.graph[v].duration_s;
  EXPECT_NEAR(analysis::total_length(busy(run, 0, Stream::compute)), compute_s, 1e-9 * compute_s);
}

// ZeRO-1 with Megatron's --overlap-param-gather, dp 4 on a fast network
// (600 GB/s, 1 us): each 200 MB bucket's gather moves while the forward
// computes the bucket before it, so only the first bucket's gather (which
// the first forward waits for) leaves the GPU idle; without the overlap the
// whole gather follows the optimizer step, exposed
// (ParamGatherOverlapCli pins the shorter iteration).
TEST(ParamGatherOverlapReplay, OnlyTheFirstBucketsGatherShows) {
  ParallelPlan plan{.dp = 4, .micro_batch_size = 1, .global_batch_size = 16};
  plan.zero_stage = 1;
  plan.overlap_grad_reduce = true;
  plan.grad_bucket_bytes = 200e6;
  plan.overlap_param_gather = true;
  const auto cluster = testing::uniform_cluster(1, 4, 600e9, 1e-6);
  const auto run = replay_plan(plan, cluster);
  std::vector<analysis::Interval> gathers;
  for (const auto& r : run.timeline.records)
    if (r.gpu == 0 && r.stream == Stream::dp_comm &&
        run.graph[r.task].op == workloads::CollectiveOp::all_gather)
      gathers.emplace_back(r.start_s, r.end_s);
  ASSERT_GE(gathers.size(), 6u);
  std::sort(gathers.begin(), gathers.end());
  EXPECT_NEAR(gathers.front().first, 0, 1e-12);
  const auto merged = analysis::merge_intervals(gathers);
  const double total = analysis::total_length(merged);
  const double shown = total - analysis::overlap_length(busy(run, 0, Stream::compute), merged);
  const double first = gathers.front().second - gathers.front().first;
  EXPECT_NEAR(shown, first, 1e-6 * total);
  EXPECT_LT(first, total / 4);
}

// GPT-3 1.3B (tied embeddings) on two pipeline stages, one GPU per node
// (100 GB/s NICs): the embedding group's all-reduce of the 51,200 x 2,048
// bf16 gradient (210 MB) starts once both GPUs have finished their last
// task, takes a two-rank ring's S / B (2 (n - 1) / n S over each GPU's NIC),
// and both optimizer steps wait for it.
TEST(TiedEmbeddingSyncReplay, TheAllReduceRunsAfterBothStagesAndBeforeBothSteps) {
  const ParallelPlan plan{.pp = 2, .micro_batch_size = 1, .global_batch_size = 4};
  const auto run = replay_plan(plan, testing::uniform_cluster(2, 1, 100e9, 1e-6));
  double sync_start = -1, sync_end = -1;
  std::array<double, 2> last_compute{0, 0}, step_start{-1, -1};
  for (const auto& r : run.timeline.records) {
    const auto& task = run.graph[r.task];
    if (task.kind == workloads::TaskKind::collective && task.comm == workloads::CommKind::pp) {
      sync_start = sync_start < 0 ? r.start_s : std::min(sync_start, r.start_s);
      sync_end = std::max(sync_end, r.end_s);
    } else if (task.kind == workloads::TaskKind::optimizer) {
      step_start[static_cast<std::size_t>(r.gpu)] = r.start_s;
    } else if (r.stream == Stream::compute) {
      auto& last = last_compute[static_cast<std::size_t>(r.gpu)];
      last = std::max(last, r.end_s);
    }
  }
  ASSERT_GE(sync_start, 0);
  const double bytes = 51200.0 * 2048 * 2;
  EXPECT_NEAR(sync_end - sync_start, bytes / 100e9, 0.02 * bytes / 100e9);
  for (std::size_t gpu : {0u, 1u}) {
    EXPECT_GE(sync_start, last_compute[gpu] - 1e-12) << gpu;
    EXPECT_GE(step_start[gpu], sync_end - 1e-12) << gpu;
  }
}

}  // namespace
}  // namespace trainsim::sim
