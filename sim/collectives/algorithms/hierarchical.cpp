// Hierarchical collectives, as Horovod and torch's hierarchical all-reduce
// run them (not an NCCL algorithm): intra-node reduce-scatter, inter-node
// collective across rails on S/m, intra-node all-gather (all-reduce);
// reduce-scatter and all-gather keep their half. Intra-node phases are rings
// here; NVLS across nodes (algorithms/nvls.cpp) frames the same inter-node
// rings with in-switch reductions.
#include <algorithm>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

Expansion hierarchical_expansion(CollectiveOp op, const GroupLayout& layout, double bytes,
                                 const ClusterZone& zone) {
  const int m = layout.uniform_members();
  const IntraNodePhase node_rings = [&](CollectiveOp intra_op, Expansion& x, DetailedPhases& detailed) {
    std::vector<std::vector<int>> rings;
    std::vector<double> chunk;
    for (const auto& members : layout.members) {
      const auto rings_of_node = ring_channels(layout_of(members, zone), zone);
      for (const auto& ring : rings_of_node) {
        rings.push_back(ring);
        chunk.push_back(bytes / static_cast<double>(rings_of_node.size()) / m);
      }
    }
    x.channels = std::max(x.channels, static_cast<int>(rings.size() / layout.domains.size()));
    const int steps = ring_steps(intra_op, m);
    x.phases.push_back(ring_phase(rings, steps, chunk, wire_hops(rings, zone), in_flight(zone), zone));
    detailed.push_back(
        [rings, steps, chunk, w = in_flight(zone)]() { return make_ring_steps(rings, steps, chunk, w); });
  };
  return hierarchical_phases(op, layout, bytes, zone, CollectiveAlgorithm::hierarchical, node_rings);
}

std::string hierarchical_unavailable(CollectiveOp /*op*/, const GroupLayout& layout,
                                     const ClusterZone& /*zone*/) {
  if (layout.single_domain())
    return "hierarchical needs ranks on several nodes";
  if (layout.uniform_members() < 2)
    return "hierarchical needs the same number of ranks, at least 2, on every node";
  return "";
}

// Not an NCCL algorithm: `auto` never picks it.
bool hierarchical_considered(const GroupLayout& /*layout*/) {
  return false;
}

}  // namespace

Expansion hierarchical_phases(CollectiveOp op, const GroupLayout& layout, double bytes,
                              const ClusterZone& zone, CollectiveAlgorithm algorithm,
                              const IntraNodePhase& intra) {
  const int m = layout.uniform_members();
  const int nodes = static_cast<int>(layout.domains.size());
  Expansion x;
  x.algorithm = algorithm;
  DetailedPhases detailed;
  auto inter = [&](CollectiveOp inter_op) {
    std::vector<std::vector<int>> rails(static_cast<std::size_t>(m));
    for (int r = 0; r < m; ++r)
      for (const auto& members : layout.members)
        rails[static_cast<std::size_t>(r)].push_back(members[static_cast<std::size_t>(r)]);
    const int steps = ring_steps(inter_op, nodes);
    const std::vector<double> chunk(static_cast<std::size_t>(m), bytes / m / nodes);
    x.phases.push_back(ring_phase(rails, steps, chunk, wire_hops(rails, zone), in_flight(zone), zone));
    detailed.push_back(
        [rails, steps, chunk, w = in_flight(zone)]() { return make_ring_steps(rails, steps, chunk, w); });
  };

  if (op == CollectiveOp::all_gather) {
    inter(CollectiveOp::all_gather);
    intra(CollectiveOp::all_gather, x, detailed);
  } else {
    intra(CollectiveOp::reduce_scatter, x, detailed);
    inter(op == CollectiveOp::all_reduce ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter);
    if (op == CollectiveOp::all_reduce)
      intra(CollectiveOp::all_gather, x, detailed);
  }
  x.detailed = [detailed]() {
    std::vector<std::unique_ptr<Collective>> phases;
    for (const auto& make : detailed)
      phases.push_back(make());
    return make_sequence(std::move(phases));
  };
  return x;
}

AlgorithmTraits hierarchical_traits() {
  return {.algorithm = CollectiveAlgorithm::hierarchical,
          .ops = {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather},
          .only_when_asked = false,
          .unavailable = hierarchical_unavailable,
          .tuner_considers = hierarchical_considered,
          .expand = hierarchical_expansion};
}

}  // namespace trainsim::sim
