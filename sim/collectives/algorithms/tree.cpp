// NCCL's double binary tree all-reduce: each chunk is reduced up both trees
// to their roots and broadcast back down, one tree pair per rail, with a
// chain through each node's members below the GPU that holds the tree edges
// (the trees themselves: sim/collectives/layout.cpp).
#include <algorithm>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

Expansion tree_expansion(CollectiveOp /*op*/, const GroupLayout& layout, double bytes,
                         const ClusterZone& zone) {
  auto trees = double_binary_trees(layout, zone);
  // With NCCL's costs on (collectives.protocol), the tree reaches only NCCL's
  // measured share of its model's bandwidth at medium sizes: its chunks carry
  // correspondingly more bytes, as a protocol's do.
  const double correction = zone.spec().collectives.ring_protocol == platforms::RingProtocol::wire
                                ? 1.0
                                : tree_correction_factor(bytes);
  const double per_tree = bytes / static_cast<double>(trees.size()) / correction;
  Expansion x;
  x.algorithm = CollectiveAlgorithm::tree;
  x.channels = static_cast<int>(trees.size() / 2);
  Phase phase;
  const int height = add_tree_edges(trees, per_tree, phase.edges);
  // Reduce up, then broadcast down: a pipeline 2 x height hops deep.
  const int depth = 2 * height;
  const double latency_s = max_latency(phase.edges, zone);
  const int chunks = pipeline_chunks(phase.edges, depth, latency_s, zone);
  set_pipeline(phase, depth, chunks, latency_s);
  x.phases.push_back(std::move(phase));
  const std::vector<double> chunk(trees.size(), per_tree / chunks);
  x.detailed = [trees, chunks, chunk]() { return make_tree_pipeline(trees, chunks, chunk); };
  return x;
}

}  // namespace

int add_tree_edges(const std::vector<Tree>& trees, double per_tree, std::vector<FlowRequest>& edges) {
  int height = 0;
  for (const auto& tree : trees) {
    height = std::max(height, tree.height());
    for (std::size_t v = 0; v < tree.gpus.size(); ++v) {
      const int p = tree.parent[v];
      if (p < 0)
        continue;
      edges.push_back({tree.gpus[v], tree.gpus[static_cast<std::size_t>(p)], per_tree, 0});
      edges.push_back({tree.gpus[static_cast<std::size_t>(p)], tree.gpus[v], per_tree, 0});
    }
  }
  return height;
}

AlgorithmTraits tree_traits() {
  return {.algorithm = CollectiveAlgorithm::tree,
          .ops = {CollectiveOp::all_reduce},
          .only_when_asked = false,
          .unavailable = available_on_any_group,
          .tuner_considers = always_weighed,
          .expand = tree_expansion};
}

}  // namespace trainsim::sim
