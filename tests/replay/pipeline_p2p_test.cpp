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
//
// overlap (Megatron's interleaved schedule with overlap_p2p_comm), v chunks
// per rank, m micro-batches (groups of p): without communication the
// interleaved replay is (m v + p - 1)(f + b). With transfers no longer than
// either op (t <= min(f, b)) the waits on the previous op's send are hidden
// by the warm-up's extra 2 (p - r - 1) forwards, and overlap costs what
// async does, one transfer per hop of the first micro-batch's walk down the
// p v virtual stages and back:
//     T = (m v + p - 1)(f + b) + 2 (p v - 1) t.
// p = v = m = 2 with t > min(f, b): rank 1's two cool-down backwards (micro-
// batches 0 and 1 on chunk 0) run back to back. Under async the second
// starts when its gradient arrives; under overlap it first waits for the
// first one's send (bwd_wait_handles), so the longest path becomes
// micro-batch 0's walk down the four virtual stages and back to stage 1
// (4 f + 3 b + 5 t), that backward's send t, micro-batch 1's backward b on
// stage 1, its send t and rank 0's last backward b: 4 f + 5 b + 7 t (with
// f <= b; 5 f + 4 b + 7 t symmetrically), against async's 5 (f + b) + 6 t:
//     T = 5 (f + b) + 6 t + max(0, t - min(f, b)).
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
struct Pipeline {
  int p = 2, m = 1, v = 1;  // v > 1: interleaved_1f1b
  double forward_s = kForward, backward_s = kBackward, latency_s = kLatency;
};

Replayed run(const Pipeline& pipe, P2pMode mode, bool tied_embeddings = false) {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  model.layers = pipe.v > 1 ? pipe.p * pipe.v : 24;
  model.tied_embeddings = tied_embeddings;
  workloads::ParallelPlan plan{
      .dp = 1, .tp = 1, .pp = pipe.p, .micro_batch_size = 1, .global_batch_size = pipe.m};
  if (pipe.v > 1) {
    plan.schedule = workloads::ScheduleKind::interleaved_one_f_one_b;
    plan.virtual_stages = pipe.v;
  }
  plan.p2p = mode;
  const auto cluster = testing::uniform_cluster(pipe.p, 1, 1e18, pipe.latency_s);
  const auto graph = workloads::build_iteration(model, plan, cluster,
                                                testing::FixedCostModel(pipe.forward_s, pipe.backward_s));
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

Replayed run(int p, int m, P2pMode mode, bool tied_embeddings = false) {
  return run(Pipeline{.p = p, .m = m}, mode, tied_embeddings);
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

// overlap against its closed form where the warm-up hides its waits, and
// async with it (the two cost the same there). One replay per test: SimGrid
// is initialised once per process.
using PipelineShape = std::tuple<int, int, int>;  // p, v, m

class PipelineP2pOverlapClosedForm : public ::testing::TestWithParam<std::tuple<P2pMode, PipelineShape>> {};

TEST_P(PipelineP2pOverlapClosedForm, HiddenWaitsCostOneTransferPerHopLikeAsync) {
  const P2pMode mode = std::get<0>(GetParam());
  const auto [p, v, m] = std::get<1>(GetParam());
  const Replayed r = run(Pipeline{.p = p, .m = m, .v = v}, mode);
  EXPECT_NEAR(r.transfer_s, kLatency, kTolerance_s);
  const double expected = (m * v + p - 1) * (kForward + kBackward) + 2 * (p * v - 1) * r.transfer_s;
  EXPECT_NEAR(r.iteration_s, expected, kTolerance_s);
}

INSTANTIATE_TEST_SUITE_P(Pipelines, PipelineP2pOverlapClosedForm,
                         ::testing::Combine(::testing::Values(P2pMode::overlap, P2pMode::async),
                                            ::testing::Values(PipelineShape{2, 2, 2}, PipelineShape{2, 2, 4},
                                                              PipelineShape{2, 3, 8}, PipelineShape{4, 2, 8},
                                                              PipelineShape{4, 3, 16},
                                                              PipelineShape{6, 4, 24})),
                         [](const auto& info) {
                           const PipelineShape& shape = std::get<1>(info.param);
                           return fmt::format("{}_p{}_v{}_m{}", workloads::to_string(std::get<0>(info.param)),
                                              std::get<0>(shape), std::get<1>(shape), std::get<2>(shape));
                         });

// Transfers longer than an op: the wait on the previous backward's send
// shows in rank 1's cool-down, t - min(f, b) more than async.
class PipelineP2pOverlapSlowSend : public ::testing::TestWithParam<std::tuple<P2pMode, double>> {};

TEST_P(PipelineP2pOverlapSlowSend, ASlowSendHoldsTheNextBackwardOfTheSameRankUnderOverlapOnly) {
  const auto [mode, t] = GetParam();
  const Replayed r = run(Pipeline{.p = 2, .m = 2, .v = 2, .latency_s = t}, mode);
  EXPECT_NEAR(r.transfer_s, t, kTolerance_s);
  const double async_form = 5 * (kForward + kBackward) + 6 * t;
  const double hold = mode == P2pMode::overlap ? t - std::min(kForward, kBackward) : 0.0;
  EXPECT_NEAR(r.iteration_s, async_form + hold, kTolerance_s);
}

INSTANTIATE_TEST_SUITE_P(Transfers, PipelineP2pOverlapSlowSend,
                         ::testing::Combine(::testing::Values(P2pMode::overlap, P2pMode::async),
                                            ::testing::Values(3e-3, 5e-3)),
                         [](const auto& info) {
                           return fmt::format("{}_t{}us", workloads::to_string(std::get<0>(info.param)),
                                              static_cast<int>(std::get<1>(info.param) * 1e6));
                         });

}  // namespace
}  // namespace trainsim::sim
