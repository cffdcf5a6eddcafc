// Direct point-to-point transfers: all-to-all (every pair at once, as
// nccl-tests' alltoall posts one group of ncclSend / ncclRecv to every peer)
// and send_recv (each rank to the next). No choice: the only algorithm of
// these ops.
#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

Expansion direct_expansion(CollectiveOp op, const GroupLayout& layout, double bytes,
                           const ClusterZone& zone) {
  const auto& gpus = layout.gpus;
  const std::size_t n = gpus.size();
  Expansion x;
  x.algorithm = CollectiveAlgorithm::direct;
  Phase phase;
  if (op == CollectiveOp::send_recv) {
    for (std::size_t i = 0; i < n; ++i)
      phase.edges.push_back({gpus[i], gpus[(i + 1) % n], bytes, 0});
    phase.latency_s = max_latency(phase.edges, zone);
    x.detailed = [edges = phase.edges]() { return make_flow_set(edges); };
  } else {
    // All-to-all as NCCL runs it: every pair's transfer is posted at once
    // and they proceed together over NCCL's p2p channels, sharing their
    // links, so the latency is one hop rather than n - 1 (the latency of the
    // routes leaving the first and last rank stands for all of them).
    const double piece = bytes / static_cast<double>(n);
    std::vector<FlowRequest> sample;
    for (std::size_t s = 1; s < n; ++s) {
      sample.push_back({gpus[0], gpus[s], piece, 0});
      sample.push_back({gpus[n - 1], gpus[(n - 1 + s) % n], piece, 0});
    }
    phase.latency_s = max_latency(sample, zone);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t s = 1; s < n; ++s)
        phase.edges.push_back({gpus[i], gpus[(i + s) % n], piece, 0});
    x.detailed = [edges = phase.edges]() { return make_flow_set(edges); };
    x.fast_is_detailed = true;
  }
  x.phases.push_back(std::move(phase));
  return x;
}

// An uneven all-to-all (imbalanced expert routing): the same pairwise
// transfers posted at once, each carrying what its sender routes to its
// receiver, so the busiest receiver's links carry more and finish last.
Expansion direct_uneven_expansion(const GroupLayout& layout, const workloads::Exchange& exchange,
                                  const ClusterZone& zone) {
  const auto& send_bytes = exchange.send_bytes;
  const auto& gpus = layout.gpus;
  const std::size_t n = gpus.size();
  Expansion x;
  x.algorithm = CollectiveAlgorithm::direct;
  Phase phase;
  std::vector<FlowRequest> sample;
  for (std::size_t s = 1; s < n; ++s) {
    sample.push_back({gpus[0], gpus[s], 1, 0});
    sample.push_back({gpus[n - 1], gpus[(n - 1 + s) % n], 1, 0});
  }
  phase.latency_s = max_latency(sample, zone);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t s = 1; s < n; ++s) {
      const std::size_t j = (i + s) % n;
      const double bytes = send_bytes[i * n + j];
      if (bytes > 0)
        phase.edges.push_back({gpus[i], gpus[j], bytes, 0});
    }
  x.detailed = [edges = phase.edges]() { return make_flow_set(edges); };
  x.fast_is_detailed = true;
  x.phases.push_back(std::move(phase));
  return x;
}

}  // namespace

AlgorithmTraits direct_traits() {
  return {.algorithm = CollectiveAlgorithm::direct,
          .ops = {CollectiveOp::all_to_all, CollectiveOp::send_recv},
          .only_when_asked = false,
          .unavailable = available_on_any_group,
          .tuner_considers = always_weighed,
          .expand = direct_expansion,
          .expand_uneven = direct_uneven_expansion};
}

}  // namespace trainsim::sim
