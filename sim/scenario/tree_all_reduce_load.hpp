#pragma once
// What a plan's gradient all-reduces cost the replay when NCCL's tuner
// (`collectives.algorithm: auto`) runs them as double binary trees across
// nodes (sim/collectives/algorithms/tree.cpp), for the size guard
// (run_size.hpp). No SimGrid here: the tuner's choice is made again from
// its closed forms on the cluster's NIC bandwidth and hop latency.
//
// HSDP's all-reduce of each layer's shard across 64 replicas, one member
// per node, is two trees of 63 edges (one channel), each chunk reduced up
// and broadcast down:
//
//        root            flows per all-reduce = 2 trees x 63 edges
//       /    |                                  x 2 (up, down) x chunks
//     o       o          chunks: the pipeline's (up to max_pipeline_chunks)
//    / |     / |
//   o  o    o  o  ...
//
// An all-reduce whose links no other flow shares is computed without flows
// (automatic fidelity's isolated runs); the all-reduces of several groups
// on the same rail (HSDP's shard positions: dp_shard groups per rail) share
// the spine and run as SimGrid flows, each flow's start and end solving the
// max-min sharing of every flow in flight: that is what made a 64-node
// tree all-reduce at 16,384 GPUs run for over 10 minutes (docs/performance.md).
#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {

struct TreeAllReduceLoad {
  bool tree = false;           // the tuner's pick for the plan's gradient all-reduce is a tree
  int members = 0;             // nodes one all-reduce spans (one rank per node)
  double bytes = 0;            // one all-reduce
  int chunks = 0;              // the tree pipeline's chunks
  double groups = 0;           // all-reduces at once: one per GPU position of a replica group
  double per_iteration = 0;    // all-reduces per group and iteration
  double flows = 0;            // flows of all of them in an iteration (trees only)
  double groups_per_rail = 0;  // groups sharing a rail's links: above 1 they contend
};

// The plan's gradient all-reduce: HSDP's per-layer shard across the
// replicas, or ZeRO 0-2's per-bucket all-reduce across data parallelism.
// `tree` is false for anything else (full sharding, one node, a fixed
// algorithm other than tree, fast fidelity).
TreeAllReduceLoad tree_all_reduce_load(const Scenario& scenario);

// Whether the tuner's closed forms (latency terms plus the busiest link's
// load over its bandwidth, sim/collectives/expansion.cpp) make the double
// binary tree faster than the ring for an all-reduce of `bytes` over
// `nodes` nodes, one rank per node, one channel.
bool tuner_picks_tree(int nodes, double bytes, double bandwidth_Bps, double hop_latency_s, int max_chunks);

// The chunks the tree pipeline of such an all-reduce is cut into.
int tree_chunks(int nodes, double bytes, double bandwidth_Bps, double hop_latency_s, int max_chunks);

}  // namespace trainsim::scenario
