#pragma once
#include <tuple>
// Small hand-built task graphs and timelines whose analyses are worked out by
// hand in the tests' comments.
#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"
#include "support/test_cluster.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::testing {

using analysis::Stream;
using workloads::CommKind;
using workloads::Task;
using workloads::TaskKind;

// Two pipeline stages, one micro-batch, times in seconds:
//   GPU 0: F0 [0,1]  send->1 [1,2]             recv [5,6]  B0 [6,8]  opt [8,8.5]
//   GPU 1:           recv   [1,2]  F1 [2,3]  B1 [3,5]  send->0 [5,6]  opt [5,5.5]
// Iteration: 8.5 s. Network: GPU 0's NIC up and GPU 1's NIC down (1 GB/s)
// carry the forward send, the reverse pair the backward send.
struct TwoStagePipeline {
  workloads::TaskGraph graph;
  analysis::Timeline timeline;
  workloads::ParallelPlan plan{.dp = 1, .tp = 1, .pp = 2, .micro_batch_size = 1, .global_batch_size = 1};
  platforms::ClusterSpec cluster = uniform_cluster(2, 1, 1e9, 0);
  workloads::ModelSpec model;
  workloads::TaskId f0, s0, f1, b1, s1, b0, opt0, opt1;

  TwoStagePipeline() {
    model.seq_len = 100;
    graph.gpu_count = 2;
    f0 = graph.add({.kind = TaskKind::forward, .gpu = 0, .stage = 0, .micro_batch = 0, .duration_s = 1});
    s0 = graph.add({.kind = TaskKind::send,
                    .comm = CommKind::pp,
                    .gpu = 0,
                    .peer = 1,
                    .stage = 0,
                    .micro_batch = 0,
                    .bytes = 1e9});
    f1 = graph.add({.kind = TaskKind::forward, .gpu = 1, .stage = 1, .micro_batch = 0, .duration_s = 1});
    b1 = graph.add({.kind = TaskKind::backward, .gpu = 1, .stage = 1, .micro_batch = 0, .duration_s = 2});
    s1 = graph.add({.kind = TaskKind::send,
                    .comm = CommKind::pp,
                    .gpu = 1,
                    .peer = 0,
                    .stage = 1,
                    .micro_batch = 0,
                    .bytes = 1e9});
    b0 = graph.add({.kind = TaskKind::backward, .gpu = 0, .stage = 0, .micro_batch = 0, .duration_s = 2});
    opt0 = graph.add({.kind = TaskKind::optimizer, .gpu = 0, .stage = 0, .duration_s = 0.5});
    opt1 = graph.add({.kind = TaskKind::optimizer, .gpu = 1, .stage = 1, .duration_s = 0.5});
    graph.depend(f0, s0);
    graph.depend(s0, f1);
    graph.depend(f1, b1);
    graph.depend(b1, s1);
    graph.depend(s1, b0);
    graph.depend(f0, b0);
    graph.depend(b0, opt0);
    graph.depend(b1, opt1);
    // Memory: 100 bytes of weights on each GPU, and 10 bytes of activations
    // from each forward's start to its backward's end.
    graph.resident_memory.resize(2);
    using At = workloads::MemoryEvent::At;
    for (auto [gpu, f, b] : {std::tuple{0, f0, b0}, std::tuple{1, f1, b1}}) {
      graph.resident_memory[static_cast<std::size_t>(gpu)][workloads::MemoryKind::weights] = 100;
      graph.add_memory(f, gpu, At::start, workloads::MemoryKind::activations, 10);
      graph.add_memory(b, gpu, At::end, workloads::MemoryKind::activations, -10);
    }
    graph.seal();
    timeline.records = {{f0, 0, Stream::compute, 0, 1},     {s0, 0, Stream::pp_comm, 1, 2},
                        {f1, 1, Stream::compute, 2, 3},     {b1, 1, Stream::compute, 3, 5},
                        {opt1, 1, Stream::compute, 5, 5.5}, {s1, 1, Stream::pp_comm, 5, 6},
                        {b0, 0, Stream::compute, 6, 8},     {opt0, 0, Stream::compute, 8, 8.5}};
    timeline.end_s = 8.5;
    timeline.links = {{"gpu0-nic_UP", 1e9, 0},
                      {"gpu1-nic_DOWN", 1e9, 0},
                      {"gpu1-nic_UP", 1e9, 0},
                      {"gpu0-nic_DOWN", 1e9, 0}};
    timeline.flow_links = {0, 1, 2, 3};
    timeline.flows = {{s0, 0, 1, 1e9, 1, 2, 0, 2}, {s1, 1, 0, 1e9, 5, 6, 2, 2}};
  }
};

// Two data-parallel replicas (no pipeline) of which GPU 1 runs at half speed:
// both ops are nominally F 1 s and B 2 s.
//   GPU 0: F [0,1] B [1,3]                    all-reduce [6,7] opt [7,7.5]
//   GPU 1: F [0,2]       B [2,6]              all-reduce [6,7] opt [7,7.5]
struct SlowReplica {
  workloads::TaskGraph graph;
  analysis::Timeline timeline;
  workloads::ParallelPlan plan{.dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2};
  workloads::TaskId f0, b0, f1, b1, all_reduce, opt0, opt1;

  SlowReplica() {
    graph.gpu_count = 2;
    const int group = graph.add_group({0, 1});
    f0 = graph.add({.kind = TaskKind::forward, .gpu = 0, .stage = 0, .micro_batch = 0, .duration_s = 1});
    b0 = graph.add({.kind = TaskKind::backward, .gpu = 0, .stage = 0, .micro_batch = 0, .duration_s = 2});
    f1 = graph.add({.kind = TaskKind::forward, .gpu = 1, .stage = 0, .micro_batch = 0, .duration_s = 1});
    b1 = graph.add({.kind = TaskKind::backward, .gpu = 1, .stage = 0, .micro_batch = 0, .duration_s = 2});
    all_reduce = graph.add(
        {.kind = TaskKind::collective, .comm = CommKind::dp, .group = group, .stage = 0, .bytes = 1e6});
    opt0 = graph.add({.kind = TaskKind::optimizer, .gpu = 0, .stage = 0, .duration_s = 0.5});
    opt1 = graph.add({.kind = TaskKind::optimizer, .gpu = 1, .stage = 0, .duration_s = 0.5});
    graph.depend(f0, b0);
    graph.depend(f1, b1);
    graph.depend(b0, all_reduce);
    graph.depend(b1, all_reduce);
    graph.depend(all_reduce, opt0);
    graph.depend(all_reduce, opt1);
    graph.seal();
    timeline.records = {{f0, 0, Stream::compute, 0, 1},         {b0, 0, Stream::compute, 1, 3},
                        {f1, 1, Stream::compute, 0, 2},         {b1, 1, Stream::compute, 2, 6},
                        {all_reduce, 0, Stream::dp_comm, 6, 7}, {all_reduce, 1, Stream::dp_comm, 6, 7},
                        {opt0, 0, Stream::compute, 7, 7.5},     {opt1, 1, Stream::compute, 7, 7.5}};
    timeline.end_s = 7.5;
  }
};

}  // namespace trainsim::testing
