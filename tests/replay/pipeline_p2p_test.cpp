// plan.p2p replayed: a 1F1B pipeline of uniform stages (forward f, backward b)
// whose transfers each take t (links of latency t and unbounded bandwidth),
// against the closed forms of the two pairings (docs/schedules.md,
// "Pipeline p2p"). Without communication both are (m + p - 1)(f + b).
//
// sync, p = 2: the two ranks exchange in lock step after every op of the
// steady state (rank 0 sends a_i and receives g_j in one batch while rank 1
// sends g_j and receives a_i), so every micro-batch costs f + b + t:
//     T = (m + 1)(f + b) + (m + 1) t.
// sync, p >= 3, m >= p: the longest path takes the first micro-batch down
// the pipeline ((p - 1) transfers) and its gradient back to rank 1 (p - 2),
// then rank 1's steady state, where every op waits behind one exchange
// (2(m - p) + 1 of them), then the last micro-batch down ((p - 2)) and its
// gradient back to rank 0 ((p - 1)):
//     T = (m + p - 1)(f + b) + (2m + 2p - 5) t.
// async, p = 2: rank 1 starts its forward k at S_k with S_0 = f + t,
// S_1 = S_0 + f + b and S_(k+2) = max(S_(k+1) + f + b, S_k + 2(f + b) + 2t)
// (gradient k back, rank 0's B_k and F_(k+2), the activation over): so
// S_k = S_0 + k (f + b) + 2 floor(k / 2) t, and rank 0's last backward ends
//     T = (m + 1)(f + b) + 2 ceil(m / 2) t.
// The sync pairing costs one transfer per micro-batch more than async on two
// ranks: what a blocking send exposes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/summary.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::sim {
namespace {

using workloads::P2pMode;

constexpr double kForward = 1e-3, kBackward = 2e-3, kLatency = 50e-6;
// SimGrid dates events to about 1e-11 s here; a missing or extra transfer
// would be 50e-6 s.
constexpr double kTolerance_s = 1e-9;

struct Replayed {
  double iteration_s = 0;
  double transfer_s = 0;        // every send's duration (checked equal)
  double embedding_sync_s = 0;  // the tied embedding all-reduce's span
};

// Untied by default: the closed forms above count the pipeline's sends
// only; a tied model adds the first / last stage embedding all-reduce after
// the last backward (PipelineP2pTiedEmbeddings below).
Replayed run(int p, int m, P2pMode mode, bool tied_embeddings = false) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = 24;
  model.tied_embeddings = tied_embeddings;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = p, .micro_batch_size = 1, .global_batch_size = m};
  plan.p2p = mode;
  const auto cluster = testing::uniform_cluster(p, 1, 1e18, kLatency);
  const auto graph =
      workloads::build_iteration(model, plan, cluster, testing::FixedCostModel(kForward, kBackward));
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  const auto timeline = replay(graph, *zone);
  Replayed r;
  r.iteration_s = analysis::summarize(graph, timeline, model, plan, cluster).iteration_time_s;
  double sync_start = -1, sync_end = -1;
  for (const auto& record : timeline.records) {
    const auto& task = graph[record.task];
    if (task.kind == workloads::TaskKind::collective && task.comm == workloads::CommKind::pp) {
      sync_start = sync_start < 0 ? record.start_s : std::min(sync_start, record.start_s);
      sync_end = std::max(sync_end, record.end_s);
    }
  }
  r.embedding_sync_s = sync_start < 0 ? 0 : sync_end - sync_start;
  for (const auto& record : timeline.records)
    if (graph[record.task].kind == workloads::TaskKind::send) {
      const double d = record.end_s - record.start_s;
      if (r.transfer_s == 0)
        r.transfer_s = d;
      EXPECT_NEAR(d, r.transfer_s, kTolerance_s);
    }
  return r;
}

class PipelineP2pClosedForm : public ::testing::TestWithParam<int> {};

TEST_P(PipelineP2pClosedForm, TwoRankSyncPaysOneTransferPerMicroBatchAndOneMore) {
  const int m = GetParam();
  const Replayed r = run(2, m, P2pMode::sync);
  EXPECT_NEAR(r.transfer_s, kLatency, kTolerance_s);
  const double expected = (m + 1) * (kForward + kBackward) + (m + 1) * r.transfer_s;
  EXPECT_NEAR(r.iteration_s, expected, kTolerance_s);
}

TEST_P(PipelineP2pClosedForm, TwoRankAsyncPaysATransferPerMicroBatchPairRoundedUp) {
  const int m = GetParam();
  const Replayed r = run(2, m, P2pMode::async);
  const double expected = (m + 1) * (kForward + kBackward) + 2 * std::ceil(m / 2.0) * r.transfer_s;
  EXPECT_NEAR(r.iteration_s, expected, kTolerance_s);
}

INSTANTIATE_TEST_SUITE_P(MicroBatches, PipelineP2pClosedForm, ::testing::Values(1, 2, 3, 4, 7, 8, 16));

// Tied: the first and last stage all-reduce the embedding's gradient once
// rank 0's last backward is done (it ends last), before the optimizer steps
// (free here): the iteration is the untied closed form plus that all-reduce.
class PipelineP2pTiedEmbeddings : public ::testing::TestWithParam<int> {};

TEST_P(PipelineP2pTiedEmbeddings, TheEmbeddingAllReduceFollowsTheClosedFormOnTheCriticalPath) {
  const int p = GetParam(), m = 8;
  const Replayed tied = run(p, m, P2pMode::sync, true);
  const double t = tied.transfer_s;
  const double untied = p == 2 ? (m + 1) * (kForward + kBackward) + (m + 1) * t
                               : (m + p - 1) * (kForward + kBackward) + (2 * m + 2 * p - 5) * t;
  EXPECT_GT(tied.embedding_sync_s, kLatency);  // at least one latency-bound step
  EXPECT_NEAR(tied.iteration_s, untied + tied.embedding_sync_s, kTolerance_s);
}

INSTANTIATE_TEST_SUITE_P(Stages, PipelineP2pTiedEmbeddings, ::testing::Values(2, 4));

class PipelineP2pSyncDeep : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(PipelineP2pSyncDeep, EveryInteriorOpWaitsBehindOneExchange) {
  const auto [p, m] = GetParam();
  const Replayed sync = run(p, m, P2pMode::sync);
  const double expected = (m + p - 1) * (kForward + kBackward) + (2 * m + 2 * p - 5) * sync.transfer_s;
  EXPECT_NEAR(sync.iteration_s, expected, kTolerance_s);
}

INSTANTIATE_TEST_SUITE_P(Pipelines, PipelineP2pSyncDeep,
                         ::testing::Values(std::tuple{3, 3}, std::tuple{3, 8}, std::tuple{4, 4},
                                           std::tuple{4, 16}, std::tuple{8, 8}, std::tuple{8, 32}),
                         [](const auto& info) {
                           return fmt::format("p{}_m{}", std::get<0>(info.param), std::get<1>(info.param));
                         });

}  // namespace
}  // namespace trainsim::sim
