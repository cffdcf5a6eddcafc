// The builder copies the ops and sends of a data-parallel replica alike to
// one it built (same micro-batches, same GpuSpec on every GPU of the same
// place) instead of building them again (TaskGraph::append_image). The copy must
// be the graph the builder would have built: pinned against the same plan
// on a cluster whose every node is a node group of its own (equal specs,
// but distinct objects, so no replica is copied), fingerprint and all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::workloads {
namespace {

// The same nodes, one node group each: no two GPUs share a GpuSpec object.
platforms::ClusterSpec one_group_per_node(const platforms::ClusterSpec& uniform) {
  platforms::ClusterSpec split = uniform;
  platforms::NodeGroup node = uniform.groups.front();
  node.nodes = 1;
  split.groups.assign(static_cast<std::size_t>(uniform.groups.front().nodes), node);
  return split;
}

TEST(ReplicaCopy, AReplicaCopiedFromOneAlikeIsTheGraphBuiltReplicaByReplica) {
  struct Option {
    std::string name;
    void (*set)(ParallelPlan&);
  };
  const std::vector<Option> options = {
      {"1f1b", [](ParallelPlan&) {}},
      {"interleaved, overlapped p2p",
       [](ParallelPlan& p) {
         p.schedule = ScheduleKind::interleaved_one_f_one_b;
         p.virtual_stages = 2;
         p.p2p = P2pMode::overlap;
       }},
      {"async p2p", [](ParallelPlan& p) { p.p2p = P2pMode::async; }},
      {"sync p2p", [](ParallelPlan& p) { p.p2p = P2pMode::sync; }},
      {"interleaved, sequence parallel",
       [](ParallelPlan& p) {
         p.schedule = ScheduleKind::interleaved_one_f_one_b;
         p.virtual_stages = 2;
         p.sequence_parallel = true;
       }},
      {"cp, zb_h1, fsdp",
       [](ParallelPlan& p) {
         p.cp = 2;
         p.schedule = ScheduleKind::zb_h1;
         p.zero_stage = 3;
       }},
      {"zero1 buckets, overlapped gather",
       [](ParallelPlan& p) {
         p.zero_stage = 1;
         p.overlap_grad_reduce = true;
         p.overlap_param_gather = true;
       }},
      {"userbuffers",
       [](ParallelPlan& p) {
         p.sequence_parallel = true;
         p.tp_comm_overlap = TpCommOverlap::userbuffers;
       }},
      {"torch async tp",
       [](ParallelPlan& p) {
         p.sequence_parallel = true;
         p.tp_comm_overlap = TpCommOverlap::torch_async;
       }},
      {"bpipe, full recompute",
       [](ParallelPlan& p) {
         p.schedule = ScheduleKind::bpipe;
         p.recompute = Recompute::full;
       }},
      {"uneven micro-batches",
       [](ParallelPlan& p) {
         p.dp_micro_batches = {8, 4, 8, 12};
       }},
  };
  const auto model = *find_model_preset("gpt3-1.3b");
  for (const auto& option : options) {
    SCOPED_TRACE(option.name);
    ParallelPlan plan{.dp = 4, .tp = 2, .pp = 4, .micro_batch_size = 1, .global_batch_size = 32};
    option.set(plan);
    const AnalyticCostModel cost(model, plan, 0.5);
    const auto uniform = testing::uniform_cluster(plan.gpu_count() / 2, 2, 100e9, 1e-6);
    const TaskGraph copied = build_iteration(model, plan, uniform, cost);
    const TaskGraph built = build_iteration(model, plan, one_group_per_node(uniform), cost);
    EXPECT_EQ(copied.counts(), built.counts());
    EXPECT_EQ(copied.groups, built.groups);
    EXPECT_EQ(graph_fingerprint(copied), graph_fingerprint(built));
  }
}

}  // namespace
}  // namespace trainsim::workloads
