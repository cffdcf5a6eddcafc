// plan.p2p: how the builder ties a pipeline transfer to the two ranks' compute.
// sync (Megatron-core's blocking batched send / receive): the transfer waits
// for its receiver to have finished the op before the consumer (the receive
// is posted between two ops), and the sender's next op waits for the
// transfer. async: the transfer waits for its data only, the sender goes on.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <boost/graph/topological_sort.hpp>
#include <set>

#include "support/test_cluster.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/plan_checks.hpp"

namespace trainsim::workloads {
namespace {

ParallelPlan pipeline_plan(ScheduleKind schedule, int pp, int m, int v, P2pMode mode) {
  ParallelPlan plan{.dp = 1, .tp = 1, .pp = pp, .micro_batch_size = 1, .global_batch_size = m};
  plan.schedule = schedule;
  plan.virtual_stages = v;
  plan.p2p = mode;
  return plan;
}

TaskGraph build(const ParallelPlan& plan, int layers = 24) {
  auto model = *find_model_preset("gpt3-1.3b");
  model.layers = layers;
  const auto cluster = testing::uniform_cluster(plan.gpu_count(), 1, 100e9, 1e-6);
  return build_iteration(model, plan, cluster, testing::FixedCostModel(1, 2));
}

// Whether the plan checks refuse `mode` on a 4-stage pipeline of the
// schedule (16 micro-batches, one virtual stage more than its default where
// it runs several chunks), with a message saying what was expected.
bool p2p_refused(const ScheduleTraits& traits, P2pMode mode, const std::string& expected) {
  auto model = *find_model_preset("gpt3-1.3b");
  model.layers = 16;
  const int v = std::max(default_virtual_stages(traits.kind), 1) + (traits.chunks == ChunksPerRank::several);
  const auto problems = plan_problems(model, pipeline_plan(traits.kind, 4, 16, v, mode));
  return std::any_of(problems.begin(), problems.end(), [&](const auto& p) {
    return p.key == "plan.p2p" && p.message.find(expected) != std::string::npos;
  });
}

bool acyclic(const TaskGraph& graph) {
  std::vector<TaskId> order;
  try {
    boost::topological_sort(graph.dependencies(), std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    return false;
  }
  return true;
}

// The compute tasks of GPU `gpu`, in the order the builder chained them.
std::vector<TaskId> compute_of(const TaskGraph& graph, int gpu) {
  std::vector<TaskId> tasks;
  for (TaskId id = 0; id < graph.size(); ++id)
    if (is_compute(graph[id].kind) && graph[id].kind != TaskKind::optimizer && graph[id].gpu == gpu)
      tasks.push_back(id);
  return tasks;
}

std::set<TaskId> predecessors(const TaskGraph& graph, TaskId id) {
  std::set<TaskId> before;
  for (auto [e, end] = boost::in_edges(workloads::task_vertex(id), graph.dependencies()); e != end; ++e)
    before.insert(boost::source(*e, graph.dependencies()));
  return before;
}

// Megatron-core runs 1F1B with blocking batched p2p (batch_p2p_comm, the
// default of ModelParallelConfig; megatron/training forces overlap_p2p_comm
// off without virtual stages), the interleaved schedule with
// overlap_p2p_comm (its default): so do the schedules' defaults.
TEST(PipelineP2p, DefaultsFollowWhatMegatronCoreRunsForTheSchedule) {
  EXPECT_EQ(resolved_p2p(pipeline_plan(ScheduleKind::one_f_one_b, 4, 8, 1, P2pMode::automatic)),
            P2pMode::sync);
  // BPipe is 1F1B's order on Megatron-LM (Kim et al.), the transfers of its
  // evictions aside.
  EXPECT_EQ(resolved_p2p(pipeline_plan(ScheduleKind::bpipe, 4, 8, 1, P2pMode::automatic)), P2pMode::sync);
  for (ScheduleKind other : {ScheduleKind::gpipe, ScheduleKind::zb_h1, ScheduleKind::zb_h2,
                             ScheduleKind::zb_v, ScheduleKind::dualpipe_v, ScheduleKind::dualpipe})
    EXPECT_EQ(traits_of(other).p2p, P2pMode::async) << to_string(other);
  EXPECT_EQ(resolved_p2p(pipeline_plan(ScheduleKind::interleaved_one_f_one_b, 4, 8, 2, P2pMode::automatic)),
            P2pMode::overlap);
  EXPECT_EQ(resolved_p2p(pipeline_plan(ScheduleKind::interleaved_one_f_one_b, 4, 8, 2, P2pMode::async)),
            P2pMode::async);
  EXPECT_EQ(resolved_p2p(pipeline_plan(ScheduleKind::interleaved_one_f_one_b, 4, 8, 2, P2pMode::sync)),
            P2pMode::sync);
  EXPECT_EQ(resolved_p2p(pipeline_plan(ScheduleKind::one_f_one_b, 4, 8, 1, P2pMode::async)), P2pMode::async);
}

// Under sync, every send in 1F1B: after its producer and its receiver's op
// before the consumer; the sender's next op after it. Under async only the
// producer.
TEST(PipelineP2p, SyncSendsWaitForTheReceiverAndHoldTheSender) {
  for (const P2pMode mode : {P2pMode::sync, P2pMode::async}) {
    SCOPED_TRACE(to_string(mode));
    const auto graph = build(pipeline_plan(ScheduleKind::one_f_one_b, 4, 8, 1, mode));
    std::vector<std::vector<TaskId>> compute;
    for (int gpu = 0; gpu < 4; ++gpu)
      compute.push_back(compute_of(graph, gpu));
    auto position = [&](int gpu, TaskId id) {
      const auto& list = compute[static_cast<std::size_t>(gpu)];
      return static_cast<std::size_t>(std::find(list.begin(), list.end(), id) - list.begin());
    };
    int sends = 0;
    for (TaskId id = 0; id < graph.size(); ++id) {
      const Task& send = graph[id];
      if (send.kind != TaskKind::send)
        continue;
      ++sends;
      const auto& from = compute[static_cast<std::size_t>(send.gpu)];
      const auto& to = compute[static_cast<std::size_t>(send.peer)];
      // The producer is its only predecessor on the sender; the consumer its
      // successor on the receiver.
      std::size_t producer = from.size(), consumer = to.size();
      for (TaskId p : predecessors(graph, id))
        if (graph[p].gpu == send.gpu)
          producer = position(send.gpu, p);
      for (auto [e, end] = boost::out_edges(workloads::task_vertex(id), graph.dependencies()); e != end; ++e)
        if (graph[boost::target(*e, graph.dependencies())].gpu == send.peer)
          consumer = position(send.peer, boost::target(*e, graph.dependencies()));
      ASSERT_LT(producer, from.size());
      ASSERT_LT(consumer, to.size());
      const bool waits_for_receiver = consumer > 0 && predecessors(graph, id).contains(to[consumer - 1]);
      const bool holds_sender =
          producer + 1 < from.size() && predecessors(graph, from[producer + 1]).contains(id);
      EXPECT_EQ(waits_for_receiver, mode == P2pMode::sync && consumer > 0) << task_label(send);
      EXPECT_EQ(holds_sender, mode == P2pMode::sync && producer + 1 < from.size()) << task_label(send);
    }
    EXPECT_EQ(sends, 3 * 2 * 8);
  }
}

// A deadlock would be a cycle in the graph (the replay would stall). Every
// schedule that allows sync is checked over pipelines of 2 to 6 ranks, short
// and long batches, 2 and 3 chunks.
TEST(PipelineP2p, SyncPairingNeverDeadlocksWhereTheScheduleAllowsIt) {
  for (const auto& traits : schedule_table()) {
    if (!traits.sync_p2p)
      continue;
    for (int pp = 2; pp <= 6; ++pp)
      for (int m : {1, 2, 3, 4, 7, 8, 12, 16}) {
        for (int v : {1, 2, 3}) {
          const int chunks = default_virtual_stages(traits.kind);
          if (chunks != 0 && v != chunks)
            continue;
          if (chunks == 0 && v == 1)
            continue;
          const ParallelPlan plan = pipeline_plan(traits.kind, pp, m, v, P2pMode::sync);
          auto model = *find_model_preset("gpt3-1.3b");
          model.layers = pp * v * 2;
          if (!plan_problems(model, plan).empty())
            continue;
          SCOPED_TRACE(fmt::format("{} pp {} m {} v {}", traits.name, pp, m, v));
          EXPECT_TRUE(acyclic(build(plan, model.layers)));
        }
      }
  }
}

TEST(PipelineP2p, SyncIsRefusedWhereTheScheduleCannotPairIt) {
  for (const auto& traits : schedule_table()) {
    EXPECT_EQ(p2p_refused(traits, P2pMode::sync, "expected p2p: async"), !traits.sync_p2p) << traits.name;
  }
}

// overlap (Megatron's interleaved overlap_p2p_comm), on interleaved p 4,
// m 8, v 2: every send waits for its producer and for the receiver's
// previous op of the consumer's kind (the receive posted after it; none
// before a rank's first forward, the last warm-up forward before its first
// backward), and the sender's next op of the producer's kind waits for the
// send; no other op of either rank is tied to it.
TEST(PipelineP2p, OverlapSendsWaitForThePostedReceiveAndHoldTheNextOpOfTheirKind) {
  const int p = 4, m = 8, v = 2;
  const auto graph =
      build(pipeline_plan(ScheduleKind::interleaved_one_f_one_b, p, m, v, P2pMode::overlap), 16);
  ScheduleOptions options;
  options.virtual_stages = v;
  const auto sched = make_schedule(ScheduleKind::interleaved_one_f_one_b, p, m, options);
  std::vector<std::vector<TaskId>> compute;
  for (int gpu = 0; gpu < p; ++gpu) {
    compute.push_back(compute_of(graph, gpu));
    ASSERT_EQ(compute.back().size(), sched.per_rank[static_cast<std::size_t>(gpu)].size());
  }
  auto position = [&](int gpu, TaskId id) {
    const auto& list = compute[static_cast<std::size_t>(gpu)];
    return static_cast<std::size_t>(std::find(list.begin(), list.end(), id) - list.begin());
  };
  auto kind = [&](int gpu, std::size_t k) {
    return sched.per_rank[static_cast<std::size_t>(gpu)][k].kind == PipeOpKind::forward;
  };
  int sends = 0, held = 0, posted_late = 0;
  for (TaskId id = 0; id < graph.size(); ++id) {
    const Task& send = graph[id];
    if (send.kind != TaskKind::send)
      continue;
    ++sends;
    const auto& from = compute[static_cast<std::size_t>(send.gpu)];
    const auto& to = compute[static_cast<std::size_t>(send.peer)];
    std::size_t producer = from.size(), consumer = to.size(), posted = to.size();
    for (TaskId before : predecessors(graph, id)) {
      if (graph[before].gpu == send.gpu)
        producer = position(send.gpu, before);
      else if (graph[before].gpu == send.peer)
        posted = position(send.peer, before);
    }
    std::vector<std::size_t> held_ops;
    for (auto [e, end] = boost::out_edges(workloads::task_vertex(id), graph.dependencies()); e != end; ++e) {
      const TaskId after = boost::target(*e, graph.dependencies());
      if (graph[after].gpu == send.peer)
        consumer = position(send.peer, after);
      else if (graph[after].gpu == send.gpu && position(send.gpu, after) < from.size())
        held_ops.push_back(position(send.gpu, after));  // not the optimizer after a last send
    }
    ASSERT_LT(producer, from.size()) << task_label(send);
    ASSERT_LT(consumer, to.size()) << task_label(send);
    // The receiver's previous op of the consumer's kind.
    std::size_t expected_post = to.size();
    for (std::size_t q = consumer; q-- > 0;)
      if (kind(send.peer, q) == kind(send.peer, consumer)) {
        expected_post = q;
        break;
      }
    if (expected_post == to.size() && !kind(send.peer, consumer))
      expected_post = consumer - 2;  // m > p: a steady forward sits between
    EXPECT_EQ(posted, expected_post) << task_label(send);
    posted_late += posted != to.size() && posted + 1 < consumer;
    // The sender's next op of the producer's kind, if any.
    std::size_t next = from.size();
    for (std::size_t q = producer + 1; q < from.size(); ++q)
      if (kind(send.gpu, q) == kind(send.gpu, producer)) {
        next = q;
        break;
      }
    if (next < from.size()) {
      ASSERT_EQ(held_ops.size(), 1u) << task_label(send);
      EXPECT_EQ(held_ops.front(), next) << task_label(send);
      ++held;
    } else {
      EXPECT_TRUE(held_ops.empty()) << task_label(send);
    }
  }
  EXPECT_EQ(sends, 2 * (p * v - 1) * m);
  EXPECT_GT(held, sends / 2);
  EXPECT_GT(posted_late, 0);  // some receives are posted two ops ahead, unlike sync
}

// No cycle (the replay would stall) over pipelines of 2 to 6 ranks, 2 to 4
// chunks, short and long batches.
TEST(PipelineP2p, OverlapPairingNeverDeadlocks) {
  for (int pp = 2; pp <= 6; ++pp)
    for (int v = 2; v <= 4; ++v)
      for (int groups : {1, 2, 3, 4}) {
        const int m = groups * pp;
        const ParallelPlan plan =
            pipeline_plan(ScheduleKind::interleaved_one_f_one_b, pp, m, v, P2pMode::overlap);
        auto model = *find_model_preset("gpt3-1.3b");
        model.layers = pp * v;
        ASSERT_TRUE(plan_problems(model, plan).empty()) << pp << " " << v << " " << m;
        SCOPED_TRACE(fmt::format("pp {} m {} v {}", pp, m, v));
        EXPECT_TRUE(acyclic(build(plan, model.layers)));
      }
}

TEST(PipelineP2p, OverlapIsRefusedOutsideTheInterleavedSchedule) {
  for (const auto& traits : schedule_table()) {
    EXPECT_EQ(p2p_refused(traits, P2pMode::overlap, "expected p2p: sync or async"),
              traits.kind != ScheduleKind::interleaved_one_f_one_b)
        << traits.name;
  }
}

}  // namespace
}  // namespace trainsim::workloads
