// Rings: NCCL's ring all-reduce, reduce-scatter, all-gather and broadcast,
// one ring per channel (sim/collectives/layout.cpp lays them out per rail),
// and p2p_ring, a workload's plain send/recv ring in group order. The ring
// phases here are shared with the hierarchical algorithms.
#include <algorithm>
#include <limits>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

std::vector<FlowRequest> ring_edges(const std::vector<std::vector<int>>& rings,
                                    const std::vector<double>& bytes) {
  std::vector<FlowRequest> edges;
  for (std::size_t c = 0; c < rings.size(); ++c)
    for (std::size_t i = 0; i < rings[c].size(); ++i)
      edges.push_back({rings[c][i], rings[c][(i + 1) % rings[c].size()], bytes[c], 0});
  return edges;
}

// The largest sum of `steps` consecutive hop latencies around a ring: the
// chunk a rank sends at the last step left `steps` hops upstream at step 0
// and crossed each of them once (whole laps, then the worst stretch of the
// rest). What a ring pays when no rank waits for its own previous sends.
double ring_path_latency(const std::vector<double>& hop, int steps) {
  const std::size_t n = hop.size();
  double lap = 0;
  for (std::size_t i = 0; i < n; ++i)
    lap += hop[i];
  const std::size_t rest = static_cast<std::size_t>(steps) % n;
  double window = 0;
  for (std::size_t i = 0; i < rest; ++i)
    window += hop[i];
  double worst = window;
  for (std::size_t start = 1; start < n && rest > 0; ++start) {
    window += hop[(start + rest - 1) % n] - hop[start - 1];
    worst = std::max(worst, window);
  }
  return static_cast<double>(static_cast<std::size_t>(steps) / n) * lap + worst;
}

// A ring across nodes charged NCCL's protocol costs (collectives.protocol):
// each hop costs the protocol's step inside a node or between nodes, at
// least its route's latency (the difference is its flows' delay_s; a route
// without latency stays without, as SimGrid charges latency as a factor of
// the route's), the chunks carry the protocol's bytes, NCCL_STEPS steps are
// in flight, and the protocol's base cost beyond Simple's is a fixed latency
// (launch_latency stands for Simple's). `auto`: the protocol with the least
// estimated time, as NCCL's tuner picks it.
Expansion protocol_ring_expansion(const std::vector<std::vector<int>>& rings, int steps, double bytes, int n,
                                  const ClusterZone& zone) {
  const auto wire = wire_hops(rings, zone);
  const double simple_base_s = protocol_costs(platforms::RingProtocol::simple).base_s;
  Expansion best;
  double best_s = std::numeric_limits<double>::infinity();
  for (const ProtocolCosts* costs : candidate_protocols(zone.spec().collectives.ring_protocol)) {
    auto hops = wire;
    std::vector<std::vector<double>> delays;
    for (std::size_t c = 0; c < rings.size(); ++c) {
      auto& delay = delays.emplace_back(rings[c].size(), 0.0);
      for (std::size_t i = 0; i < rings[c].size(); ++i) {
        // NCCL's network step is a step between NVLink domains (NET); inside
        // one, even across the trays of an NVL72, a step is an NVLink one.
        const bool between_domains =
            zone.domain_of(rings[c][i]) != zone.domain_of(rings[c][(i + 1) % rings[c].size()]);
        const double step_s = between_domains ? costs->network_step_s : costs->nvlink_step_s;
        if (hops[c][i] > 0 && step_s > hops[c][i]) {
          delay[i] = step_s - hops[c][i];
          hops[c][i] = step_s;
        }
      }
    }
    const std::vector<double> chunk(rings.size(),
                                    bytes / static_cast<double>(rings.size()) / n / costs->bandwidth_factor);
    Expansion x;
    x.algorithm = CollectiveAlgorithm::ring;
    x.channels = static_cast<int>(rings.size());
    x.protocol = costs->protocol;
    auto phase = ring_phase(rings, steps, chunk, hops, costs->steps_in_flight, zone);
    phase.fixed_latency_s =
        std::max(costs->base_s - simple_base_s, -zone.spec().collectives.launch_latency_s);
    x.phases.push_back(std::move(phase));
    x.detailed = [rings, steps, chunk, w = costs->steps_in_flight, delays]() {
      return make_ring_steps(rings, steps, chunk, w, delays);
    };
    const double t = estimate(x, zone);
    if (t < best_s) {
      best = std::move(x);
      best_s = t;
    }
  }
  return best;
}

Expansion ring_expansion(CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone,
                         CollectiveAlgorithm algorithm) {
  // p2p_ring: one ring in group order, each rank sending to the next with
  // its own NIC; NCCL's rings run one channel per rail.
  auto rings = algorithm == CollectiveAlgorithm::p2p_ring ? std::vector<std::vector<int>>{layout.gpus}
                                                          : ring_channels(layout, zone);
  const auto channels = rings.size();
  const int n = static_cast<int>(layout.gpus.size());
  Expansion x;
  x.algorithm = algorithm;
  x.channels = static_cast<int>(channels);
  if (op == CollectiveOp::broadcast) {
    // Each ring, cut open at the root, is a chain carrying 1/C of the data.
    std::vector<std::vector<int>> chains;
    for (auto& ring : rings) {
      std::rotate(ring.begin(), std::find(ring.begin(), ring.end(), layout.gpus.front()), ring.end());
      chains.push_back(ring);
    }
    const double per_chain = bytes / static_cast<double>(channels);
    Phase phase;
    for (const auto& chain : chains)
      for (std::size_t e = 0; e + 1 < chain.size(); ++e)
        phase.edges.push_back({chain[e], chain[e + 1], per_chain, 0});
    const int depth = n - 1;
    const double latency_s = max_latency(phase.edges, zone);
    const int chunks = pipeline_chunks(phase.edges, depth, latency_s, zone);
    set_pipeline(phase, depth, chunks, latency_s);
    x.phases.push_back(std::move(phase));
    const std::vector<double> chunk(channels, per_chain / chunks);
    x.detailed = [chains, chunks, chunk]() { return make_chain_pipeline(chains, chunks, chunk); };
    return x;
  }
  const int steps = ring_steps(op, n);
  if (algorithm == CollectiveAlgorithm::ring && !layout.single_domain() &&
      zone.spec().collectives.ring_protocol != platforms::RingProtocol::wire)
    return protocol_ring_expansion(rings, steps, bytes, n, zone);
  const std::vector<double> chunk(channels, bytes / static_cast<double>(channels) / n);
  x.phases.push_back(ring_phase(rings, steps, chunk, wire_hops(rings, zone), in_flight(zone), zone));
  x.detailed = [rings, steps, chunk, w = in_flight(zone)]() {
    return make_ring_steps(rings, steps, chunk, w);
  };
  return x;
}

}  // namespace

int ring_steps(CollectiveOp op, int n) {
  return op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
}

std::vector<std::vector<double>> wire_hops(const std::vector<std::vector<int>>& rings,
                                           const ClusterZone& zone) {
  std::vector<std::vector<double>> hops;
  for (const auto& ring : rings) {
    auto& hop = hops.emplace_back(ring.size());
    for (std::size_t i = 0; i < ring.size(); ++i)
      hop[i] = zone.latency_s(ring[i], ring[(i + 1) % ring.size()]);
  }
  return hops;
}

int in_flight(const ClusterZone& zone) {
  return zone.spec().collectives.ring_steps_in_flight;
}

// Its latency term: one step in flight, every step waits for the slowest
// hop, steps x its latency; W in flight, a rank behind a hop of latency a
// and per-step bytes time b sends a step every max(b, (a + b) / W), and no
// ring finishes before its chunks have crossed their path
// (ring_path_latency).
Phase ring_phase(const std::vector<std::vector<int>>& rings, int steps, const std::vector<double>& chunk,
                 const std::vector<std::vector<double>>& hops, int window, const ClusterZone& zone) {
  std::vector<double> volume;
  for (double c : chunk)
    volume.push_back(c * steps);
  Phase phase;
  phase.edges = ring_edges(rings, volume);
  phase.detailed_flows = static_cast<std::int64_t>(steps) * static_cast<std::int64_t>(phase.edges.size());
  double slowest_hop_s = 0;
  for (const auto& hop : hops)
    for (double h : hop)
      slowest_hop_s = std::max(slowest_hop_s, h);
  if (window <= 1) {
    phase.latency_s = steps * slowest_hop_s;
    return phase;
  }
  const double step_bytes_s = bandwidth_term_s(phase.edges, zone) / steps;
  const double paced_s = steps * std::max(0.0, (slowest_hop_s + step_bytes_s) / window - step_bytes_s);
  for (const auto& hop : hops)
    phase.latency_s = std::max(phase.latency_s, ring_path_latency(hop, steps));
  phase.latency_s = std::max(phase.latency_s, paced_s);
  return phase;
}

AlgorithmTraits ring_traits() {
  return {.algorithm = CollectiveAlgorithm::ring,
          .ops = {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
                  CollectiveOp::broadcast},
          .only_when_asked = false,
          .unavailable = available_on_any_group,
          .tuner_considers = always_weighed,
          .expand = [](CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone) {
            return ring_expansion(op, layout, bytes, zone, CollectiveAlgorithm::ring);
          }};
}

// A workload's own ring (ring attention's block passing): what it asks for
// is what runs, never tuned.
AlgorithmTraits p2p_ring_traits() {
  auto traits = ring_traits();
  traits.algorithm = CollectiveAlgorithm::p2p_ring;
  traits.only_when_asked = true;
  traits.expand = [](CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone) {
    return ring_expansion(op, layout, bytes, zone, CollectiveAlgorithm::p2p_ring);
  };
  return traits;
}

}  // namespace trainsim::sim
