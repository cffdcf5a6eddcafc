// BPipe: 1F1B's order plus activation evictions inside stage pairs, and the
// transfers the builder makes of them.
#include <gtest/gtest.h>

#include <boost/graph/topological_sort.hpp>

#include "support/schedule_checks.hpp"
#include "support/test_cluster.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

TEST(BPipe, KeepsOneFOneBOrder) {
  const auto b = make_bpipe(8, 16), o = make_one_f_one_b(8, 16);
  EXPECT_EQ(b.per_rank, o.per_rank);
}

TEST(BPipe, ResidentLimitIsHalfOfAPairsActivations) {
  EXPECT_EQ(bpipe_resident_limit(4), 3);  // ceil(5 / 2)
  EXPECT_EQ(bpipe_resident_limit(8), 5);  // ceil(9 / 2)
  EXPECT_EQ(bpipe_resident_limit(5), 3);
}

// p = 4, m = 8, limit 3. Stage 0 (1F1B holds up to 4): F3 lifts it to 4,
// so micro-batch 3 leaves for stage 3 and comes back when B2 (op 8) ends,
// two ops before B3 (op 10); F6 finds 3 resident again (the reload of 3 is
// back), so 6 leaves too and returns after B4 (op 12) for B6 (op 14).
// Stage 1 never holds more than 3: no eviction.
TEST(BPipe, EvictsAboveTheLimitAndReloadsTwoOpsBeforeTheBackward) {
  const auto s = make_bpipe(4, 8);
  ASSERT_EQ(s.evictions.size(), 2u);
  const auto& a = s.evictions[0];
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(a.acceptor, 3);
  EXPECT_EQ(a.micro_batch, 3);
  EXPECT_EQ(a.evict_after, 3);
  EXPECT_EQ(a.reload_after, 8);
  EXPECT_EQ(a.reload_before, 10);
  const auto& b = s.evictions[1];
  EXPECT_EQ(b.micro_batch, 6);
  EXPECT_EQ(b.evict_after, 9);
  EXPECT_EQ(b.reload_after, 12);
  EXPECT_EQ(b.reload_before, 14);
}

// Counts per evictor stage: stage s evicts while 1F1B would hold more than
// the limit, so stages with p - s <= limit never do, and the middle stage of
// an odd pipeline has no partner.
TEST(BPipe, OnlyStagesAboveTheLimitEvictAndEachPairStaysBalanced) {
  for (int p : {2, 3, 4, 5, 8})
    for (int m : {1, 4, 8, 16, 32}) {
      const auto s = make_bpipe(p, m);
      const int limit = bpipe_resident_limit(p);
      std::vector<int> count(p, 0);
      for (const auto& e : s.evictions) {
        ++count[e.rank];
        EXPECT_EQ(e.acceptor, p - 1 - e.rank);
        EXPECT_LT(e.rank, p / 2);
        const auto& ops = s.per_rank[e.rank];
        EXPECT_EQ(ops[e.evict_after], (PipeOp{PipeOpKind::forward, e.micro_batch, 0}));
        EXPECT_EQ(ops[e.reload_before], (PipeOp{PipeOpKind::backward, e.micro_batch, 0}));
        EXPECT_GE(e.reload_after, e.evict_after);
        EXPECT_LT(e.reload_after, e.reload_before);
      }
      for (int r = 0; r < p; ++r) {
        if (std::min(p - r, m) <= limit) {
          EXPECT_EQ(count[r], 0) << "p=" << p << " m=" << m << " rank " << r;
        }
        // Resident activations on the evictor never exceed limit + 1.
        int resident = 0, peak = 0;
        const auto& ops = s.per_rank[r];
        for (int k = 0; k < static_cast<int>(ops.size()); ++k) {
          resident += ops[k].kind == PipeOpKind::forward ? 1 : -1;
          peak = std::max(peak, resident);
          for (const auto& e : s.evictions)
            if (e.rank == r) {
              if (e.evict_after == k)
                --resident;
              if (e.reload_after == k)
                ++resident;
            }
        }
        if (r < p / 2) {
          EXPECT_LE(peak, limit + 1) << "p=" << p << " m=" << m << " rank " << r;
        }
      }
    }
  EXPECT_EQ(make_bpipe(8, 16).evictions.size(), 13u);  // stages 0, 1, 2 evict; 3 holds 5 = limit
}

TEST(ActivationMemory, FollowsKorthikantiPerRecomputeMode) {
  auto model = *find_model_preset("gpt3-2.7b");
  ParallelPlan plan{.tp = 2, .micro_batch_size = 4};
  const double s = model.seq_len, b = 4, h = model.hidden, a = model.heads;
  plan.recompute = Recompute::none;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, plan), s * b * h * (10 + 24.0 / 2 + 5 * a * s / (h * 2)));
  plan.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, plan), s * b * h * (10 + 24.0 / 2));
  plan.recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, plan), 2 * s * b * h);
  EXPECT_DOUBLE_EQ(stage_activation_bytes(model, plan, 8), 16 * s * b * h);
  // Without TP the no-recompute form is the paper's s b h (34 + 5 a s / h).
  plan.tp = 1;
  plan.recompute = Recompute::none;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(model, plan), s * b * h * (34 + 5 * a * s / h));
}

struct BuiltBPipe {
  ModelSpec model;
  ParallelPlan plan;
  TaskGraph graph;
};

BuiltBPipe build_bpipe(int dp, int tp, int pp, int m) {
  BuiltBPipe b{*find_model_preset("gpt3-1.3b"), {}, {}};
  b.plan = ParallelPlan{.dp = dp, .tp = tp, .pp = pp, .micro_batch_size = 1, .global_batch_size = m * dp};
  b.plan.schedule = ScheduleKind::bpipe;
  const auto cluster = testing::uniform_cluster(1, dp * tp * pp, 100e9, 1e-6);
  b.graph = build_iteration(b.model, b.plan, cluster, testing::FixedCostModel(1, 2));
  return b;
}

// Every eviction becomes, per (dp, tp) rank, an evict send from the evictor
// to the same TP rank of the acceptor and a reload back, each carrying the
// stage's activations; the backward waits for the reload.
TEST(BPipe, EvictionsBecomePipelineTransfersTheBackwardWaitsFor) {
  const auto b = build_bpipe(2, 2, 4, 8);
  const auto schedule = make_bpipe(4, 8);
  const double bytes = stage_activation_bytes(b.model, b.plan, b.model.layers / 4);
  int evicts = 0, reloads = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies()))) {
    const auto& t = b.graph[v];
    if (t.kind != TaskKind::send || (t.transfer != TransferKind::evict && t.transfer != TransferKind::reload))
      continue;
    EXPECT_EQ(t.comm, CommKind::pp);
    EXPECT_DOUBLE_EQ(t.bytes, bytes);
    EXPECT_EQ(b.plan.tp_rank_of(t.gpu), b.plan.tp_rank_of(t.peer));
    EXPECT_EQ(b.plan.dp_rank_of(t.gpu), b.plan.dp_rank_of(t.peer));
    if (t.transfer == TransferKind::evict) {
      ++evicts;
      EXPECT_EQ(b.plan.pp_rank_of(t.gpu), 0);
      EXPECT_EQ(b.plan.pp_rank_of(t.peer), 3);
    } else {
      ++reloads;
      EXPECT_EQ(b.plan.pp_rank_of(t.gpu), 3);
      // The reload feeds the evictor's backward of the same micro-batch.
      bool feeds_backward = false;
      for (auto e :
           boost::make_iterator_range(boost::out_edges(workloads::task_vertex(v), b.graph.dependencies()))) {
        const auto& next = b.graph[boost::target(e, b.graph.dependencies())];
        feeds_backward |=
            next.kind == TaskKind::backward && next.gpu == t.peer && next.micro_batch == t.micro_batch;
      }
      EXPECT_TRUE(feeds_backward);
    }
  }
  const int per_schedule = static_cast<int>(schedule.evictions.size());
  EXPECT_EQ(evicts, per_schedule * 2 * 2);  // x dp x tp
  EXPECT_EQ(reloads, evicts);
  std::vector<TaskId> order;
  EXPECT_NO_THROW(boost::topological_sort(b.graph.dependencies(), std::back_inserter(order)));
}

}  // namespace
}  // namespace trainsim::workloads
