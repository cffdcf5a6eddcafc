// Sequence and context parallelism, ZeRO 1/2/3 and gradient buckets as task
// graph collectives: counts, groups and volumes against the closed forms of
// ../shared/reference/cost-models.md, and memory events that balance.
#include <gtest/gtest.h>

#include <set>

#include <array>
#include <boost/graph/topological_sort.hpp>
#include <map>

#include "support/test_cluster.hpp"
#include "workloads/context_parallel.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_slices.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::workloads {
namespace {

ParallelPlan base_plan(int dp, int tp, int pp, int m) {
  return ParallelPlan{.dp = dp, .tp = tp, .pp = pp, .micro_batch_size = 1, .global_batch_size = m * dp};
}

TaskGraph build(const ParallelPlan& plan, const CostModel* cost = nullptr) {
  const auto model = *find_model_preset("gpt3-1.3b");
  const auto cluster = testing::uniform_cluster(1, plan.gpu_count(), 100e9, 1e-6);
  if (cost)
    return build_iteration(model, plan, cluster, *cost);
  return build_iteration(model, plan, cluster, testing::FixedCostModel(1, 2));
}

struct Key {
  CommKind comm;
  CollectiveOp op;
  auto operator<=>(const Key&) const = default;
};

// Per (comm, op): count, sum of buffer bytes x fold, and ring traffic per
// rank (all-reduce 2(n-1)/n S, the others (n-1)/n S).
struct Volume {
  int count = 0;
  double bytes = 0;
  double wire_bytes = 0;
};

std::map<Key, Volume> collectives(const TaskGraph& g) {
  std::map<Key, Volume> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind != TaskKind::collective)
      continue;
    const double n = static_cast<double>(g.groups[t.group].size());
    auto& vol = out[{t.comm, t.op}];
    ++vol.count;
    vol.bytes += t.bytes * t.fold;
    vol.wire_bytes += (t.op == CollectiveOp::all_reduce ? 2 : 1) * (n - 1) / n * t.bytes * t.fold;
  }
  return out;
}

int count_kind(const TaskGraph& g, TaskKind kind) {
  int n = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    n += g[v].kind == kind;
  return n;
}

void expect_acyclic(const TaskGraph& g) {
  std::vector<TaskId> order;
  EXPECT_NO_THROW(boost::topological_sort(g.dependencies(), std::back_inserter(order)));
}

TEST(SequenceParallel, EachTpAllReduceBecomesAReduceScatterAndAnAllGatherOfTheSameVolume) {
  auto plan = base_plan(1, 4, 2, 4);
  const auto plain = collectives(build(plan));
  plan.sequence_parallel = true;
  const auto sp = collectives(build(plan));
  const auto ar = plain.at({CommKind::tp, CollectiveOp::all_reduce});
  const auto rs = sp.at({CommKind::tp, CollectiveOp::reduce_scatter});
  const auto ag = sp.at({CommKind::tp, CollectiveOp::all_gather});
  EXPECT_FALSE(sp.contains({CommKind::tp, CollectiveOp::all_reduce}));
  EXPECT_EQ(rs.count, ar.count);
  EXPECT_EQ(ag.count, ar.count);
  EXPECT_DOUBLE_EQ(rs.bytes, ar.bytes);
  EXPECT_DOUBLE_EQ(ag.bytes, ar.bytes);
  EXPECT_DOUBLE_EQ(rs.wire_bytes + ag.wire_bytes, ar.wire_bytes);
}

// Transformer Engine's userbuffers: the same TP volume, in two segments of
// (tp - 1) / tp and 1 / tp of each collective's bytes, and the same compute
// time and FLOPs, split into the rest of each op and three segments of its
// linear GEMMs (1 / tp, (tp - 2) / tp, 1 / tp).
TEST(TpCommOverlap, SplitsEachOpsCollectivesAndGemmsWithoutChangingVolumeTimeOrFlops) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(1, 4, 2, 4);
  plan.sequence_parallel = true;
  const AnalyticCostModel cost(model, plan, 0.5);
  const auto serial = build(plan, &cost);
  plan.tp_comm_overlap = workloads::TpCommOverlap::userbuffers;
  const auto overlapped = build(plan, &cost);
  expect_acyclic(overlapped);
  for (CollectiveOp op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
    const auto a = collectives(serial).at({CommKind::tp, op});
    const auto b = collectives(overlapped).at({CommKind::tp, op});
    EXPECT_EQ(b.count, 2 * a.count);
    EXPECT_NEAR(b.bytes, a.bytes, 1e-9 * a.bytes);
  }
  auto totals = [](const TaskGraph& g) {
    std::array<double, 4> t{};  // compute tasks, seconds, model and hardware FLOPs
    for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
      if (is_compute(g[v].kind)) {
        t[0] += 1;
        t[1] += g[v].duration_s;
        t[2] += g[v].model_flops;
        t[3] += g[v].hardware_flops;
      }
    return t;
  };
  const auto a = totals(serial), b = totals(overlapped);
  // Every forward and backward (2 stages x 4 micro-batches x 2 passes, on 4
  // GPUs) gains three GEMM segments; optimizer steps stay whole.
  EXPECT_EQ(b[0], a[0] + 3.0 * (2 * 4 * 2 * 4));
  for (int i = 1; i < 4; ++i)
    EXPECT_NEAR(b[i], a[i], 1e-9 * a[i]) << i;
  // The segments carry the linear layers' share of every op: a GPT-3 1.3B
  // layer spends 24 b s h^2 of its 24 b s h^2 + 4 b s^2 h forward FLOPs in
  // them. GPU 0's first forward is its rest, then the segments (stage 0 has
  // no logits and its embedding lookup costs no FLOPs).
  std::vector<double> forward;
  for (auto v : boost::make_iterator_range(boost::vertices(overlapped.dependencies())))
    if (overlapped[v].kind == TaskKind::forward && overlapped[v].gpu == 0 && overlapped[v].micro_batch == 0)
      forward.push_back(overlapped[v].duration_s);
  ASSERT_EQ(forward.size(), 4u);
  const double whole = forward[0] + forward[1] + forward[2] + forward[3];
  const double h = model.hidden, s = model.seq_len;
  EXPECT_NEAR(whole - forward[0], 24 * h * h / (24 * h * h + 4 * s * h) * whole, 1e-9 * whole);
  EXPECT_NEAR(forward[1], forward[3], 1e-12 * whole);      // 1 / tp each
  EXPECT_NEAR(forward[2], 2 * forward[1], 1e-12 * whole);  // (tp - 2) / tp
}

// dp 2 x tp 2 x pp 2 x cp 2 = 16 GPUs, 4 micro-batches, GPT-3 1.3B (24
// layers, 12 per stage).
TEST(ContextParallel, RingExchangePerOpOverTheCpGroupAndDpSpansDpTimesCp) {
  auto plan = base_plan(2, 2, 2, 4);
  plan.cp = 2;
  const auto model = *find_model_preset("gpt3-1.3b");
  const auto g = build(plan);
  EXPECT_EQ(g.gpu_count, 16);
  int exchanges = 0, attention_parts = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm == CommKind::cp) {
      ++exchanges;
      EXPECT_EQ(t.op, CollectiveOp::all_gather);
      const auto& members = g.groups[t.group];
      ASSERT_EQ(members.size(), 2u);
      EXPECT_EQ(plan.cp_rank_of(members[0]), 0);
      EXPECT_EQ(plan.cp_rank_of(members[1]), 1);
      EXPECT_EQ(plan.pp_rank_of(members[0]), t.stage);
      // K and V of the whole sequence, over the TP group: 4 b s h / t.
      EXPECT_DOUBLE_EQ(t.bytes, 4.0 * 2048 * 2048 / 2);
      // Forward: one ring pass per layer; backward: keys and values again
      // and their gradients back.
      const Task& rest = g[boost::target(*boost::out_edges(workloads::task_vertex(v), g.dependencies()).first,
                                         g.dependencies())];
      EXPECT_EQ(t.fold, (rest.kind == TaskKind::forward ? 1 : 2) * 12);
    }
    if (is_compute(t.kind) && t.attention)
      ++attention_parts;
    if (t.kind == TaskKind::collective && t.comm == CommKind::dp) {
      EXPECT_EQ(g.groups[t.group].size(), 4u);  // dp x cp
    }
  }
  // Every forward and backward of every pipeline (dp x cp), per TP rank:
  // one exchange per (dp, rank, tp, op), one attention part per GPU and op.
  EXPECT_EQ(exchanges, 2 * 2 * 2 * (2 * 4));
  EXPECT_EQ(attention_parts, 16 * 2 * 4);
  expect_acyclic(g);
}

// The per-GPU compute of a CP rank is 1/cp of the sequence: the iteration's
// FLOPs over all GPUs are those of the plan without CP.
TEST(ContextParallel, SplitsTheWorkNotTheFlops) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(1, 2, 2, 4);
  auto flops = [&](const ParallelPlan& p) {
    const AnalyticCostModel cost(model, p, 0.5);
    const auto g = build(p, &cost);
    double total = 0, attention = 0;
    for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
      total += g[v].model_flops;
      if (g[v].attention)
        attention += g[v].model_flops;
    }
    return std::pair{total, attention};
  };
  const auto [without, none] = flops(plan);
  EXPECT_EQ(none, 0);
  plan.cp = 4;
  const auto [with, attention] = flops(plan);
  EXPECT_NEAR(with, without, 1e-9 * without);
  // The attention core's share: 4 b s^2 h of 24 b s h^2 + 4 b s^2 h per layer.
  EXPECT_GT(attention, 0);
  EXPECT_LT(attention, with);
}

TEST(Zero, StageOneReduceScattersThenGathersTheAllReducesVolume) {
  auto plan = base_plan(4, 1, 2, 4);
  const auto plain = collectives(build(plan));
  plan.zero_stage = 1;
  const auto g = build(plan);
  const auto z = collectives(g);
  const auto ar = plain.at({CommKind::dp, CollectiveOp::all_reduce});
  const auto rs = z.at({CommKind::dp, CollectiveOp::reduce_scatter});
  const auto ag = z.at({CommKind::dp, CollectiveOp::all_gather});
  EXPECT_FALSE(z.contains({CommKind::dp, CollectiveOp::all_reduce}));
  EXPECT_EQ(ar.count, 2);  // one per stage
  EXPECT_EQ(rs.count, 2);
  EXPECT_EQ(ag.count, 2);
  EXPECT_DOUBLE_EQ(rs.bytes, ar.bytes);  // bf16 gradients, bf16 parameters
  EXPECT_DOUBLE_EQ(rs.wire_bytes + ag.wire_bytes, ar.wire_bytes);
  expect_acyclic(g);
}

TEST(Zero, StageOneStepsOnlyItsOptimizerShard) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(4, 1, 1, 2);
  plan.zero_stage = 1;
  const AnalyticCostModel cost(model, plan, 0.5);
  const auto g = build(plan, &cost);
  const auto& gpu = testing::uniform_cluster(1, 4, 1e9, 0).gpu_of(0);
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].kind == TaskKind::optimizer) {
      EXPECT_DOUBLE_EQ(g[v].duration_s,
                       cost.optimizer(stage_parameters_per_gpu(model, plan, 0) / 4, gpu).duration_s);
    }
}

// ZeRO-2 shards the gradients, so each micro-batch's are reduce-scattered
// after its backward.
TEST(Zero, StageTwoReduceScattersEveryMicroBatch) {
  auto plan = base_plan(2, 2, 2, 4);
  plan.zero_stage = 2;
  const auto g = build(plan);
  const auto z = collectives(g);
  const int groups = 2 * 2;  // (stage, tp rank)
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::reduce_scatter}).count, groups * 4);
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::all_gather}).count, groups);
  expect_acyclic(g);
}

// FSDP, one stage, one micro-batch: an all-gather of every layer before its
// forward and before its backward, a reduce-scatter after its backward: 3x
// the bytes of the gradient all-reduce, 1.5x its traffic (ZeRO: 3 Psi
// against 2 Psi).
TEST(Fsdp, GathersEveryLayerTwiceAndReducesItOnce) {
  auto plan = base_plan(8, 1, 1, 1);
  const auto ar = collectives(build(plan)).at({CommKind::dp, CollectiveOp::all_reduce});
  plan.zero_stage = 3;
  const auto g = build(plan);
  const auto z = collectives(g);
  const auto ag = z.at({CommKind::dp, CollectiveOp::all_gather});
  const auto rs = z.at({CommKind::dp, CollectiveOp::reduce_scatter});
  EXPECT_EQ(ag.count, 2 * 24);
  EXPECT_EQ(rs.count, 24);
  EXPECT_FALSE(z.contains({CommKind::dp, CollectiveOp::all_reduce}));
  EXPECT_NEAR(ag.bytes + rs.bytes, 3 * ar.bytes, 1e-6 * ar.bytes);
  EXPECT_NEAR((ag.wire_bytes + rs.wire_bytes) / ar.wire_bytes, 1.5, 1e-9);
  // The layers run as pieces: 24 forward and 24 backward compute tasks per GPU.
  EXPECT_EQ(count_kind(g, TaskKind::forward), 8 * 24);
  EXPECT_EQ(count_kind(g, TaskKind::backward), 8 * 24);
  expect_acyclic(g);
}

// With pipeline stages and m micro-batches, every micro-batch gathers and
// reduces its stage's layers.
TEST(Fsdp, WithPipelineStagesEveryMicroBatchGathersItsStage) {
  auto plan = base_plan(2, 1, 2, 3);
  plan.zero_stage = 3;
  const auto g = build(plan);
  const auto z = collectives(g);
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::all_gather}).count, 2 * 2 * 12 * 3);
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::reduce_scatter}).count, 2 * 12 * 3);
  expect_acyclic(g);
}

// Prefetch: the gather of a layer waits for the previous gather and for the
// layer two before it, never for the layer just before it.
TEST(Fsdp, GatherOfTheNextLayerDoesNotWaitForTheCurrentOne) {
  auto plan = base_plan(2, 1, 1, 1);
  plan.zero_stage = 3;
  const auto g = build(plan);
  int checked = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm != CommKind::dp || t.op != CollectiveOp::all_gather || t.layer != 5)
      continue;
    for (auto [e, end] = boost::in_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e) {
      const Task& before = g[boost::source(*e, g.dependencies())];
      if (is_compute(before.kind)) {
        // Forward: layer 3 (gathers 4 and 5 in flight); backward: layer 7.
        EXPECT_EQ(std::abs(before.layer - t.layer), 2);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * 2);  // the forward's gather and the backward's, on both members
}

// Hybrid sharding (dp_shard 4 of dp 8, one micro-batch): each shard group
// of 4 consecutive GPUs gathers and reduce-scatters its own layers, and the
// GPUs at the same position of both groups (same shard) all-reduce each
// unit's shard: 1/4 of the reduce-scatter's bytes, one all-reduce per
// position and unit. Optimizer steps cover 1/4 of the stage.
TEST(Fsdp, HybridShardingGathersInEachShardGroupAndAllReducesTheShardsAcrossThem) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(8, 1, 1, 1);
  plan.zero_stage = 3;
  const auto full = collectives(build(plan));
  plan.dp_shard = 4;
  const AnalyticCostModel cost(model, plan, 0.5);
  const auto g = build(plan, &cost);
  const auto z = collectives(g);
  const int units = 24;  // 24 layers: a gather per pass, a reduce-scatter per backward
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::all_gather}).count, 2 * 2 * units);
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::reduce_scatter}).count, 2 * units);
  const auto ar = z.at({CommKind::dp, CollectiveOp::all_reduce});
  EXPECT_EQ(ar.count, 4 * units);
  const auto rs = z.at({CommKind::dp, CollectiveOp::reduce_scatter});
  EXPECT_NEAR(rs.bytes, 2 * full.at({CommKind::dp, CollectiveOp::reduce_scatter}).bytes, 1e-6 * rs.bytes);
  EXPECT_NEAR(ar.bytes, rs.bytes / 2, 1e-6 * ar.bytes);  // 4 positions x 1/4 of 2 groups' bytes
  const auto& gpu = testing::uniform_cluster(1, 8, 1e9, 0).gpu_of(0);
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind == TaskKind::optimizer) {
      EXPECT_DOUBLE_EQ(t.duration_s,
                       cost.optimizer(stage_parameters_per_gpu(model, plan, 0) / 4, gpu).duration_s);
    }
    if (t.kind != TaskKind::collective)
      continue;
    const auto& members = g.groups[t.group];
    if (t.op == CollectiveOp::all_reduce) {
      ASSERT_EQ(members.size(), 2u);
      EXPECT_EQ(members[1] - members[0], 4);  // the same position of both groups
    } else {
      ASSERT_EQ(members.size(), 4u);
      EXPECT_EQ(members[0] % 4, 0);  // 0-3 or 4-7
      EXPECT_EQ(members[3] - members[0], 3);
    }
  }
  expect_acyclic(g);
}

// A rank's all-reduce runs behind its reduce-scatter on the same stream
// (PyTorch HSDP), so the next unit's reduce-scatter waits for this unit's
// all-reduces, and every all-reduce for both groups' reduce-scatters.
TEST(Fsdp, HybridShardingChainsEachUnitsAllReduceBetweenItsReduceScatterAndTheNextOnes) {
  auto plan = base_plan(4, 1, 1, 1);
  plan.zero_stage = 3;
  plan.dp_shard = 2;
  const auto g = build(plan);
  int reduce_scatters_after_all_reduces = 0, all_reduces = 0;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind != TaskKind::collective || t.op == CollectiveOp::all_gather)
      continue;
    int scatters_before = 0, reduces_before = 0;
    for (auto [e, end] = boost::in_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e) {
      const Task& before = g[boost::source(*e, g.dependencies())];
      scatters_before += before.kind == TaskKind::collective && before.op == CollectiveOp::reduce_scatter;
      reduces_before += before.kind == TaskKind::collective && before.op == CollectiveOp::all_reduce;
    }
    if (t.op == CollectiveOp::all_reduce) {
      ++all_reduces;
      EXPECT_EQ(scatters_before, 2);  // the unit's reduce-scatter in both shard groups
    } else if (reduces_before > 0) {
      EXPECT_EQ(reduces_before, 2);  // the previous unit's all-reduces, both positions
      ++reduce_scatters_after_all_reduces;
    }
  }
  EXPECT_EQ(all_reduces, 2 * 24);
  EXPECT_EQ(reduce_scatters_after_all_reduces, 2 * 23);  // every unit's but the first, both groups
  expect_acyclic(g);
}

// dp_shard equal to dp x cp is plain FSDP: the same graph.
TEST(Fsdp, HybridShardingOverTheWholeGroupIsPlainFsdp) {
  auto plan = base_plan(4, 1, 1, 2);
  plan.zero_stage = 3;
  const auto plain = build(plan);
  plan.dp_shard = 4;
  const auto same = build(plan);
  EXPECT_EQ(graph_fingerprint(plain), graph_fingerprint(same));
}

// Buckets of 200 MB (100M bf16 gradients) over a GPT-3 1.3B stage of 12
// layers (50.4M parameters each): a bucket closes every second layer, the
// last with the embedding; the buckets carry the stage's gradients.
TEST(GradientBuckets, FireAsTheLastBackwardCompletesThem) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(2, 1, 2, 4);
  plan.overlap_grad_reduce = true;
  plan.grad_bucket_bytes = 200e6;
  const auto g = build(plan);
  std::map<int, std::pair<int, double>> per_stage;  // stage -> (buckets, bytes)
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm != CommKind::dp)
      continue;
    EXPECT_EQ(t.op, CollectiveOp::all_reduce);
    per_stage[t.stage].first++;
    per_stage[t.stage].second += t.bytes;
    EXPECT_LE(t.bytes, 200e6 + 2 * model.layer_parameters() + 2 * model.embedding_parameters());
    // Each bucket waits for backward pieces of the last micro-batch only.
    for (auto [e, end] = boost::in_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e) {
      const Task& before = g[boost::source(*e, g.dependencies())];
      if (is_compute(before.kind)) {
        EXPECT_EQ(before.kind, TaskKind::backward);
        EXPECT_EQ(before.micro_batch, 3);
      }
    }
  }
  const double layer = model.layer_parameters();
  EXPECT_EQ(per_stage[0].first, 6);
  EXPECT_EQ(per_stage[1].first, 6);
  EXPECT_DOUBLE_EQ(per_stage[0].second, 2 * stage_parameters_per_gpu(model, plan, 0));
  EXPECT_DOUBLE_EQ(per_stage[1].second, 2 * 12 * layer);
  expect_acyclic(g);
}

// Without overlap: one all-reduce per stage after the backward, as before.
TEST(GradientBuckets, OffMeansOneAllReduceAfterTheBackward) {
  auto plan = base_plan(2, 1, 2, 4);
  const auto z = collectives(build(plan));
  EXPECT_EQ(z.at({CommKind::dp, CollectiveOp::all_reduce}).count, 2);
}

// Whatever the options, every byte a task allocates is freed by the end of
// the iteration, on every GPU.
TEST(MemoryEvents, BalanceOnEveryGpuForEveryOption) {
  struct Option {
    const char* name;
    void (*set)(ParallelPlan&);
  };
  const std::vector<Option> options = {{"plain", [](ParallelPlan&) {}},
                                       {"sp", [](ParallelPlan& p) { p.sequence_parallel = true; }},
                                       {"cp", [](ParallelPlan& p) { p.cp = 2; }},
                                       {"zero1 buckets",
                                        [](ParallelPlan& p) {
                                          p.zero_stage = 1;
                                          p.overlap_grad_reduce = true;
                                        }},
                                       {"zero1 buckets, overlapped gather",
                                        [](ParallelPlan& p) {
                                          p.zero_stage = 1;
                                          p.overlap_grad_reduce = true;
                                          p.overlap_param_gather = true;
                                        }},
                                       {"zero2", [](ParallelPlan& p) { p.zero_stage = 2; }},
                                       {"zero2 buckets",
                                        [](ParallelPlan& p) {
                                          p.zero_stage = 2;
                                          p.overlap_grad_reduce = true;
                                          p.grad_bucket_bytes = 60e6;
                                        }},
                                       {"fsdp", [](ParallelPlan& p) { p.zero_stage = 3; }},
                                       {"fsdp kept, reduced per step",
                                        [](ParallelPlan& p) {
                                          p.zero_stage = 3;
                                          p.reshard_after_forward = false;
                                          p.grad_reduce_per_step = true;
                                          p.grad_bytes = 4;
                                        }},
                                       {"zero2 per step",
                                        [](ParallelPlan& p) {
                                          p.zero_stage = 2;
                                          p.grad_reduce_per_step = true;
                                        }},
                                       {"fsdp cp zb_h1",
                                        [](ParallelPlan& p) {
                                          p.zero_stage = 3;
                                          p.cp = 2;
                                          p.schedule = ScheduleKind::zb_h1;
                                        }},
                                       {"bpipe full", [](ParallelPlan& p) {
                                          p.schedule = ScheduleKind::bpipe;
                                          p.recompute = Recompute::full;
                                        }}};
  for (const auto& option : options) {
    auto plan = base_plan(2, 2, 4, 8);
    option.set(plan);
    const auto g = build(plan);
    std::vector<double> net(static_cast<std::size_t>(g.gpu_count), 0.0);
    std::vector<double> allocated = net;
    for (const auto& e : g.memory) {
      net[static_cast<std::size_t>(e.gpu)] += e.bytes;
      if (e.bytes > 0)
        allocated[static_cast<std::size_t>(e.gpu)] += e.bytes;
    }
    for (std::size_t gpu = 0; gpu < net.size(); ++gpu) {
      EXPECT_NEAR(net[gpu], 0, 1e-6 * allocated[gpu]) << option.name << " gpu " << gpu;
      EXPECT_GT(allocated[gpu], 0) << option.name;
    }
    // Each task's events sit in its range after sealing.
    for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
      for (auto i = g[v].memory_begin; i < g[v].memory_end; ++i)
        EXPECT_EQ(g.memory[i].task, v);
    expect_acyclic(g);
  }
}

// Llama 3's FSDP with pipeline stages (reshard_after_forward false,
// grad_reduce per_step): every layer gathered once per iteration, before its
// first forward, and reduce-scattered once, after its last backward, in
// grad_bytes per element; against m gathers twice and m reduce-scatters.
TEST(Fsdp, GatheredOnceAndReducedOncePerStepWithPipelineStages) {
  auto plan = base_plan(2, 1, 2, 3);
  plan.zero_stage = 3;
  plan.reshard_after_forward = false;
  plan.grad_reduce_per_step = true;
  plan.grad_bytes = 4;
  const auto g = build(plan);
  const auto z = collectives(g);
  const auto per_layer = [&](CollectiveOp op) {
    // 2 stages x 12 layers (+ the embedding on the first, the logits on the
    // last, riding with their layers).
    return z.at({CommKind::dp, op});
  };
  EXPECT_EQ(per_layer(CollectiveOp::all_gather).count, 2 * 12);
  EXPECT_EQ(per_layer(CollectiveOp::reduce_scatter).count, 2 * 12);
  // The reduce-scatters carry fp32 gradients: twice the gathers' bf16 bytes.
  EXPECT_NEAR(per_layer(CollectiveOp::reduce_scatter).bytes, 2 * per_layer(CollectiveOp::all_gather).bytes,
              1e-9 * per_layer(CollectiveOp::reduce_scatter).bytes);
  // Each reduce-scatter follows the last micro-batch's backward of its layer.
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    if (g[v].kind == TaskKind::collective && g[v].op == CollectiveOp::reduce_scatter) {
      EXPECT_EQ(g[v].micro_batch, 2) << task_label(g[v]);
    }
  }
  expect_acyclic(g);
}

TEST(Fsdp, KeepingLayersGatheredHoldsTheWholeStageUntilItsLastBackward) {
  auto plan = base_plan(2, 1, 2, 4);
  plan.zero_stage = 3;
  plan.reshard_after_forward = false;
  const auto model = *find_model_preset("gpt3-1.3b");
  const auto one_f_one_b = make_one_f_one_b(2, 4);
  const double stage_parameters = stage_parameters_per_gpu(model, plan, 1);
  const GpuMemoryModel memory(model, plan);
  const auto kept = estimate_memory(model, plan, one_f_one_b).stages[1];
  plan.reshard_after_forward = true;
  const auto resharded = estimate_memory(model, plan, one_f_one_b).stages[1];
  // Kept: the whole stage's 2 bytes per parameter; resharded: the unit
  // running and the one prefetched (here the last layer with the logits).
  EXPECT_GT(kept.at_peak[MemoryKind::buffers], memory.gathered_bytes(stage_parameters) * 0.99);
  EXPECT_GT(kept.at_peak[MemoryKind::buffers],
            resharded.at_peak[MemoryKind::buffers] + 0.5 * memory.gathered_bytes(stage_parameters));
}

// ZeRO-2 reduced once per step runs ZeRO-1's collectives and holds the
// gradients' accumulation buffer from the first backward to the reduction.
TEST(Zero, StageTwoReducedPerStepRunsStageOnesCollectives) {
  auto plan = base_plan(2, 2, 2, 4);
  plan.zero_stage = 2;
  plan.grad_reduce_per_step = true;
  const auto z = collectives(build(plan));
  plan.zero_stage = 1;
  plan.grad_reduce_per_step = false;
  const auto one = collectives(build(plan));
  for (CollectiveOp op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
    EXPECT_EQ(z.at({CommKind::dp, op}).count, one.at({CommKind::dp, op}).count);
    EXPECT_DOUBLE_EQ(z.at({CommKind::dp, op}).bytes, one.at({CommKind::dp, op}).bytes);
  }
}

TEST(Zero, PerStepReductionAndKeptParametersAreRefusedWhereTheyMeanNothing) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(2, 1, 2, 4);
  plan.zero_stage = 1;
  plan.grad_reduce_per_step = true;
  plan.reshard_after_forward = false;
  const auto problems = plan_problems(model, plan);
  std::set<std::string> keys;
  for (const auto& p : problems)
    keys.insert(p.key);
  EXPECT_TRUE(keys.contains("plan.grad_reduce"));
  EXPECT_TRUE(keys.contains("plan.reshard_after_forward"));
}

// Megatron's --overlap-param-gather (ZeRO-1 with overlapped buckets): the
// parameter all-gather leaves the end of the iteration (after the optimizer
// step) for the gradient buckets, each gating the first forward of its
// layers, chained on the DP stream; same bytes in total.
TEST(ParamGatherOverlap, GathersEveryBucketBeforeItsFirstForwardInsteadOfAfterTheStep) {
  const auto model = *find_model_preset("gpt3-1.3b");
  auto plan = base_plan(2, 1, 2, 4);
  plan.zero_stage = 1;
  plan.overlap_grad_reduce = true;
  plan.grad_bucket_bytes = 200e6;
  const auto serial = build(plan);
  plan.overlap_param_gather = true;
  const auto g = build(plan);
  std::map<int, std::pair<int, double>> per_stage, serial_stage;  // stage -> (gathers, bytes)
  for (auto v : boost::make_iterator_range(boost::vertices(serial.dependencies())))
    if (serial[v].comm == CommKind::dp && serial[v].op == CollectiveOp::all_gather) {
      serial_stage[serial[v].stage].first++;
      serial_stage[serial[v].stage].second += serial[v].bytes;
    }
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.comm != CommKind::dp || t.op != CollectiveOp::all_gather)
      continue;
    per_stage[t.stage].first++;
    per_stage[t.stage].second += t.bytes;
    // After nothing but the previous gather and forward pieces of the first
    // micro-batch; before forward pieces of the first micro-batch.
    for (auto [e, end] = boost::in_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e) {
      const Task& before = g[boost::source(*e, g.dependencies())];
      EXPECT_NE(before.kind, TaskKind::optimizer);
      if (is_compute(before.kind)) {
        EXPECT_EQ(before.kind, TaskKind::forward);
        EXPECT_EQ(before.micro_batch, 0);
      }
    }
    int gated = 0;
    for (auto [e, end] = boost::out_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e) {
      const Task& after = g[boost::target(*e, g.dependencies())];
      if (is_compute(after.kind)) {
        EXPECT_EQ(after.kind, TaskKind::forward);
        EXPECT_EQ(after.micro_batch, 0);
        ++gated;
      }
    }
    EXPECT_GE(gated, 1);
  }
  for (int stage : {0, 1}) {
    EXPECT_EQ(serial_stage[stage].first, 1);
    // 12 layers of 50.4M parameters (100M per 200 MB bucket): several buckets.
    EXPECT_GE(per_stage[stage].first, 6);
    EXPECT_NEAR(per_stage[stage].second, serial_stage[stage].second, 1e-9 * serial_stage[stage].second);
    EXPECT_NEAR(per_stage[stage].second, 2 * stage_parameters_per_gpu(model, plan, stage),
                1e-6 * per_stage[stage].second);
  }
  expect_acyclic(g);
}

TEST(ParamGatherOverlap, IsRefusedWithoutADistributedOptimizerOrBuckets) {
  const auto model = *find_model_preset("gpt3-1.3b");
  for (const int zero : {0, 3}) {
    auto plan = base_plan(2, 1, 2, 4);
    plan.zero_stage = zero;
    plan.overlap_param_gather = true;
    std::set<std::string> keys;
    for (const auto& p : plan_problems(model, plan))
      keys.insert(p.key);
    EXPECT_TRUE(keys.contains("plan.overlap_param_gather")) << zero;
  }
  auto plan = base_plan(2, 1, 2, 4);
  plan.zero_stage = 1;
  plan.overlap_param_gather = true;
  const auto problems = plan_problems(model, plan);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().message.find("without overlap_grad_reduce"), std::string::npos)
      << problems.front().message;
  plan.overlap_grad_reduce = true;
  EXPECT_TRUE(plan_problems(model, plan).empty());
}

TEST(PieceLabels, NameTheLayerAndTheAttentionPart) {
  Task t{.kind = TaskKind::backward, .layer = 7, .micro_batch = 3};
  EXPECT_EQ(task_label(t), "B mb3 layer7");
  t = {.kind = TaskKind::forward, .attention = true, .chunk = 1, .micro_batch = 0};
  EXPECT_EQ(task_label(t), "F mb0 chunk1 attn");
  t = {.kind = TaskKind::collective,
       .comm = CommKind::dp,
       .op = CollectiveOp::all_gather,
       .layer = 4,
       .micro_batch = 2};
  EXPECT_EQ(task_label(t), "dp all_gather mb2 layer4");
}

}  // namespace
}  // namespace trainsim::workloads
