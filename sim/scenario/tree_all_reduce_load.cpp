#include "sim/scenario/tree_all_reduce_load.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim::scenario {
namespace {

// Levels below the root of the trees over n nodes (NCCL's double binary
// tree: about log2 n).
int tree_height(int nodes) {
  return std::max(1, static_cast<int>(std::floor(std::log2(std::max(2, nodes)))));
}

// The busiest link's load of a tree all-reduce, in bytes per byte reduced:
// a node interior to one tree and a leaf of the other sends its parent a
// half (reduce) and its two children a half each (broadcast) in the first,
// and its parent a half in the second.
constexpr double kTreeLinkLoad = 2.0;

}  // namespace

int tree_chunks(int nodes, double bytes, double bandwidth_Bps, double hop_latency_s, int max_chunks) {
  const int depth = 2 * tree_height(nodes);
  const double bandwidth_s = kTreeLinkLoad * bytes / bandwidth_Bps;
  if (hop_latency_s <= 0)
    return max_chunks;
  const double best = std::sqrt((depth - 1) * bandwidth_s / hop_latency_s);
  return static_cast<int>(std::clamp(std::round(best), 1.0, static_cast<double>(std::max(1, max_chunks))));
}

bool tuner_picks_tree(int nodes, double bytes, double bandwidth_Bps, double hop_latency_s, int max_chunks) {
  if (nodes < 3 || bytes <= 0 || bandwidth_Bps <= 0)
    return false;
  const double n = nodes;
  const double ring_s = 2 * (n - 1) * hop_latency_s + 2 * (n - 1) / n * bytes / bandwidth_Bps;
  const int depth = 2 * tree_height(nodes);
  const int chunks = tree_chunks(nodes, bytes, bandwidth_Bps, hop_latency_s, max_chunks);
  const double bandwidth_s = kTreeLinkLoad * bytes / bandwidth_Bps;
  const double tree_s =
      (depth + chunks - 1) * hop_latency_s + (1.0 + double(depth - 1) / chunks) * bandwidth_s;
  return tree_s < ring_s;
}

TreeAllReduceLoad tree_all_reduce_load(const Scenario& scenario) {
  TreeAllReduceLoad load;
  const auto& plan = scenario.plan;
  const auto& cluster = scenario.cluster;
  const auto& collectives = cluster.collectives;
  using platforms::CollectiveAlgorithm;
  if (collectives.fidelity == platforms::Fidelity::fast || cluster.groups.empty())
    return load;
  if (collectives.algorithm != CollectiveAlgorithm::automatic &&
      collectives.algorithm != CollectiveAlgorithm::tree)
    return load;
  const int dp = plan.data_parallel_size();
  const bool hybrid = plan.hybrid_sharded();
  if (dp < 2 || (plan.zero_stage >= 3 && !hybrid))
    return load;
  const double layers_per_stage = std::max(1.0, double(scenario.model.layers) / std::max(1, plan.pp));
  if (hybrid) {
    const int shard = plan.zero_shard_size();
    load.members = dp / shard;
    load.bytes = scenario.model.layer_parameters() / std::max(1, plan.tp) * plan.grad_bytes / shard;
    load.per_iteration = layers_per_stage;
  } else {
    // Buckets with overlap_grad_reduce; else one all-reduce of the stage's
    // gradients after the backward.
    load.members = dp;
    const double stage_bytes =
        layers_per_stage * scenario.model.layer_parameters() / std::max(1, plan.tp) * plan.grad_bytes;
    load.bytes =
        plan.overlap_grad_reduce ? std::min(stage_bytes, plan.grad_bucket_size_bytes()) : stage_bytes;
    load.per_iteration = std::max(1.0, std::ceil(stage_bytes / std::max(1.0, load.bytes)));
  }
  load.members = std::min(load.members, cluster.node_count());
  if (load.members < 3)
    return load;
  const auto& group = cluster.groups.front();
  const double bandwidth_Bps = group.nic.bandwidth_Bps * group.nic.efficiency;
  const double hop_latency_s = group.nic.latency_s + cluster.fabric.spine_latency_s;
  load.tree = collectives.algorithm == CollectiveAlgorithm::tree ||
              tuner_picks_tree(load.members, load.bytes, bandwidth_Bps, hop_latency_s,
                               collectives.max_pipeline_chunks);
  if (!load.tree)
    return load;
  load.chunks =
      tree_chunks(load.members, load.bytes, bandwidth_Bps, hop_latency_s, collectives.max_pipeline_chunks);
  load.groups = double(cluster.gpu_count()) / (load.members * std::max(1, plan.pp));
  load.groups_per_rail = load.groups / std::max(1, group.nics_per_node);
  const double trees = 2;  // one channel across nodes: two trees
  load.flows = plan.pp * load.groups * load.per_iteration * trees * (load.members - 1) * 2.0 * load.chunks;
  return load;
}

}  // namespace trainsim::scenario
