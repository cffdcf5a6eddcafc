// make_collective(): from (op, group, size, algorithm) to flows. Each
// algorithm is laid out once as an Expansion: its phases, each with the
// edges it loads (whole-pass volumes: the flows of the fast fidelity and the
// basis of the tuner's estimates) and its latency terms (the closed form's),
// plus a factory for the detailed step-by-step state machine.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "sim/collectives/flows.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using platforms::Fidelity;
using workloads::CollectiveOp;

struct Phase {
  std::vector<FlowRequest> edges;  // src, dst and the bytes the edge carries over the phase
  double latency_s = 0;            // latency terms of the phase's closed form
  double fill_fraction = 0;        // pipelines: fill and drain, as a fraction of the bandwidth term
  // Latency that no flow carries in either fidelity (NVLS's fixed cost).
  double fixed_latency_s = 0;
};

struct Expansion {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  int channels = 1;
  // What a ring across nodes pays per step (collectives.protocol): the
  // protocol NCCL's tuner picked under `auto`; wire for every other expansion.
  platforms::RingProtocol protocol = platforms::RingProtocol::wire;
  std::vector<Phase> phases;
  // The step-by-step form; none when the algorithm has only its aggregated
  // form (NVLSTree: the detailed fidelity runs the fast flows).
  std::function<std::unique_ptr<Collective>()> detailed;
  // All-to-all has no aggregated form: the fast fidelity runs it step by step.
  bool fast_is_detailed = false;
};

// NCCL's NVLS resources on Hopper (NCCL 2.30 src/transport/nvls.cc,
// ncclNvlsTuning): 16 channels on SM90, chunks of NCCL_NVLS_CHUNKSIZE =
// 128 KiB, NVLSTree chunks capped at 64 KiB from 4 nodes up
// (treeMaxChunkSize), one NVLS head per NIC of the node (its rails' GPUs).
constexpr int kNvlsChannels = 16;
constexpr double kNvlsChunkBytes = 128.0 * 1024;
constexpr double kNvlsTreeChunkBytesFrom4Nodes = 64.0 * 1024;
// Fraction of a GPU's effective NVLink port bandwidth (nvlink.bandwidth x
// nvlink.efficiency) that NVLS multimem loads and stores reach. Fitted to
// NVIDIA's DGX H100 nccl-tests sample (dgxc-benchmarking nccl/README.md):
// 8-GPU NVLS all-reduce 480.2 GB/s bus bandwidth at 8 GiB, i.e. an
// algorithm bandwidth of 274.4 GB/s = 0.744 x (450 GB/s x 0.82). NCCL's own
// tuner uses 0.85 for Hopper (nvlsEfficiency, src/graph/tuning.cc) on a
// lower link rate; docs/collectives.md.
constexpr double kNvlsPortEfficiency = 0.744;
// NCCL's latency of an NVLS (Simple protocol) collective inside a node:
// hwLatencies[NVLINK][NVLS][SIMPLE] = 25 us in src/graph/tuning.cc. It is
// what keeps NCCL on rings below about 2 MiB on 8 H100s (dgxc-benchmarking
// sample: 27.4 us at 1 MiB, 42.2 us at 2 MiB with NVLS).
constexpr double kNvlsLatency_s = 25e-6;

// NCCL's NVLSTree chunk for an all-reduce of `bytes` split over
// `concurrent_ops` = channels x heads streams (src/enqueue.cc,
// calcCollChunking): smaller chunks for smaller messages, so that each
// stream still has a few chunks to pipeline.
double nvls_tree_chunk_bytes(double bytes, double concurrent_ops, std::size_t nodes) {
  double chunk = nodes >= 4 ? kNvlsTreeChunkBytesFrom4Nodes : kNvlsChunkBytes;
  if (bytes < 32 * concurrent_ops * chunk && chunk > 262144)
    chunk = 262144;
  if (bytes < 16 * concurrent_ops * chunk && chunk > 131072)
    chunk = 131072;
  if (bytes < 4 * concurrent_ops * chunk && chunk > 65536)
    chunk = 65536;
  if (bytes < 1 * concurrent_ops * chunk && chunk > 32768)
    chunk = 32768;
  return chunk;
}

double max_latency(const std::vector<FlowRequest>& edges, const ClusterZone& zone) {
  double latency = 0;
  for (const auto& e : edges)
    latency = std::max(latency, zone.path(e.src, e.dst).latency_s);
  return latency;
}

// The busiest link direction's load over its bandwidth: how long the phase
// takes at least when its edges move their bytes at the same time.
double bandwidth_term_s(const std::vector<FlowRequest>& edges, const ClusterZone& zone) {
  std::unordered_map<simgrid::s4u::Link*, double> load;
  for (const auto& e : edges)
    zone.for_each_link(e.src, e.dst, [&](simgrid::s4u::Link* link) { load[link] += e.bytes; });
  double worst = 0;
  for (const auto& [link, bytes] : load)
    worst = std::max(worst, bytes / link->get_bandwidth());
  return worst;
}

// Chunks of a pipeline `depth` hops deep. With one chunk in flight per
// edge, each chunk pays the hop latency: (depth + K - 1)(latency + T/K) for a
// bandwidth term T. NCCL hides that latency behind its in-flight slices; the
// flow model instead takes the K that minimises this time,
// sqrt((depth - 1) T / latency), capped by collectives.max_chunks.
int pipeline_chunks(const std::vector<FlowRequest>& edges, int depth, double latency_s,
                    const ClusterZone& zone) {
  const int max_chunks = zone.spec().collectives.max_pipeline_chunks;
  if (depth <= 1)
    return 1;
  if (latency_s <= 0)
    return max_chunks;
  const double best = std::sqrt((depth - 1) * bandwidth_term_s(edges, zone) / latency_s);
  return static_cast<int>(std::clamp(std::round(best), 1.0, static_cast<double>(max_chunks)));
}

// Latency terms and fill of a pipeline phase whose edges are set.
void set_pipeline(Phase& phase, int depth, int chunks, double latency_s) {
  phase.latency_s = (depth + chunks - 1) * latency_s;
  phase.fill_fraction = static_cast<double>(std::max(depth - 1, 0)) / chunks;
}

std::vector<FlowRequest> ring_edges(const std::vector<std::vector<int>>& rings,
                                    const std::vector<double>& bytes) {
  std::vector<FlowRequest> edges;
  for (std::size_t c = 0; c < rings.size(); ++c)
    for (std::size_t i = 0; i < rings[c].size(); ++i)
      edges.push_back({rings[c][i], rings[c][(i + 1) % rings[c].size()], bytes[c], 0});
  return edges;
}

// Per ring, the latency of each rank's hop to the next: its route's.
std::vector<std::vector<double>> wire_hops(const std::vector<std::vector<int>>& rings,
                                           const ClusterZone& zone) {
  std::vector<std::vector<double>> hops;
  for (const auto& ring : rings) {
    auto& hop = hops.emplace_back(ring.size());
    for (std::size_t i = 0; i < ring.size(); ++i)
      hop[i] = zone.path(ring[i], ring[(i + 1) % ring.size()]).latency_s;
  }
  return hops;
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

// Ring steps a rank may have on their way (collectives.steps_in_flight).
int in_flight(const ClusterZone& zone) {
  return zone.spec().collectives.ring_steps_in_flight;
}

// A ring phase: `steps` steps of `chunk` bytes per ring, hops of latencies
// `hops`, `window` steps in flight per rank. Its latency term: one step in
// flight, every step waits for the slowest hop, steps x its latency; W in
// flight, a rank behind a hop of latency a and per-step bytes time b sends a
// step every max(b, (a + b) / W), and no ring finishes before its chunks
// have crossed their path (ring_path_latency).
Phase ring_phase(const std::vector<std::vector<int>>& rings, int steps, const std::vector<double>& chunk,
                 const std::vector<std::vector<double>>& hops, int window, const ClusterZone& zone) {
  std::vector<double> volume;
  for (double c : chunk)
    volume.push_back(c * steps);
  Phase phase;
  phase.edges = ring_edges(rings, volume);
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

double estimate(const Expansion& x, const ClusterZone& zone);

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
        const bool between_nodes =
            zone.node_of(rings[c][i]) != zone.node_of(rings[c][(i + 1) % rings[c].size()]);
        const double step_s = between_nodes ? costs->network_step_s : costs->nvlink_step_s;
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

int ring_steps(CollectiveOp op, int n) {
  return op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
}

Expansion ring_expansion(CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone,
                         CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring) {
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
  if (algorithm == CollectiveAlgorithm::ring && !layout.single_node() &&
      zone.spec().collectives.ring_protocol != platforms::RingProtocol::wire)
    return protocol_ring_expansion(rings, steps, bytes, n, zone);
  const std::vector<double> chunk(channels, bytes / static_cast<double>(channels) / n);
  x.phases.push_back(ring_phase(rings, steps, chunk, wire_hops(rings, zone), in_flight(zone), zone));
  x.detailed = [rings, steps, chunk, w = in_flight(zone)]() {
    return make_ring_steps(rings, steps, chunk, w);
  };
  return x;
}

// Both directions of every parent-child link of the trees, `per_tree`
// bytes each (reduce up, broadcast down); returns the trees' greatest height.
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

Expansion tree_expansion(const GroupLayout& layout, double bytes, const ClusterZone& zone) {
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

// In-switch reduction on every node of the layout, `bytes` per GPU buffer.
Phase switch_phase(CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone,
                   std::vector<SwitchGroup>& groups, int& chunks, double& up_chunk, double& down_chunk) {
  const int m = layout.uniform_members();
  // Multimem transfers reach only part of the port's rate: they carry
  // correspondingly more bytes on it.
  const double up = (op == CollectiveOp::all_gather ? bytes / m : bytes) / kNvlsPortEfficiency;
  const double down = (op == CollectiveOp::reduce_scatter ? bytes / m : bytes) / kNvlsPortEfficiency;
  Phase phase;
  for (std::size_t k = 0; k < layout.nodes.size(); ++k) {
    SwitchGroup g{zone.switch_endpoint(layout.nodes[k]), layout.members[k]};
    for (int gpu : g.members) {
      phase.edges.push_back({gpu, g.switch_endpoint, up, 0});
      phase.edges.push_back({g.switch_endpoint, gpu, down, 0});
    }
    groups.push_back(std::move(g));
  }
  // Up to the switch, then down: a pipeline two hops deep.
  const double latency_s = max_latency(phase.edges, zone);
  chunks = pipeline_chunks(phase.edges, 2, latency_s, zone);
  set_pipeline(phase, 2, chunks, latency_s);
  phase.fixed_latency_s = kNvlsLatency_s;
  up_chunk = up / chunks;
  down_chunk = down / chunks;
  return phase;
}

Expansion nvls_single_node(CollectiveOp op, const GroupLayout& layout, double bytes,
                           const ClusterZone& zone) {
  Expansion x;
  x.algorithm = CollectiveAlgorithm::nvls;
  std::vector<SwitchGroup> groups;
  int chunks = 1;
  double up = 0, down = 0;
  x.phases.push_back(switch_phase(op, layout, bytes, zone, groups, chunks, up, down));
  x.detailed = [groups, chunks, up, down]() { return make_switch_pipeline(groups, chunks, up, down); };
  return x;
}

// Intra-node reduce-scatter, inter-node collective across rails on S/m,
// intra-node all-gather (all-reduce); reduce-scatter and all-gather keep
// their half. Intra-node phases are rings (hierarchical) or in-switch
// reductions (nvls).
Expansion hierarchical_expansion(CollectiveOp op, const GroupLayout& layout, double bytes,
                                 const ClusterZone& zone, bool in_switch) {
  const int m = layout.uniform_members();
  const int nodes = static_cast<int>(layout.nodes.size());
  Expansion x;
  x.algorithm = in_switch ? CollectiveAlgorithm::nvls : CollectiveAlgorithm::hierarchical;
  std::vector<std::function<std::unique_ptr<Collective>()>> detailed;

  auto intra = [&](CollectiveOp intra_op) {
    if (in_switch) {
      std::vector<SwitchGroup> groups;
      int chunks = 1;
      double up = 0, down = 0;
      x.phases.push_back(switch_phase(intra_op, layout, bytes, zone, groups, chunks, up, down));
      detailed.push_back(
          [groups, chunks, up, down]() { return make_switch_pipeline(groups, chunks, up, down); });
      return;
    }
    std::vector<std::vector<int>> rings;
    std::vector<double> chunk;
    for (const auto& members : layout.members) {
      const auto node_rings = ring_channels(layout_of(members, zone), zone);
      for (const auto& ring : node_rings) {
        rings.push_back(ring);
        chunk.push_back(bytes / static_cast<double>(node_rings.size()) / m);
      }
    }
    x.channels = std::max(x.channels, static_cast<int>(rings.size() / layout.nodes.size()));
    x.phases.push_back(ring_phase(rings, m - 1, chunk, wire_hops(rings, zone), in_flight(zone), zone));
    detailed.push_back([rings, steps = m - 1, chunk, w = in_flight(zone)]() {
      return make_ring_steps(rings, steps, chunk, w);
    });
  };
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
    intra(CollectiveOp::all_gather);
  } else {
    intra(CollectiveOp::reduce_scatter);
    inter(op == CollectiveOp::all_reduce ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter);
    if (op == CollectiveOp::all_reduce)
      intra(CollectiveOp::all_gather);
  }
  x.detailed = [detailed]() {
    std::vector<std::unique_ptr<Collective>> phases;
    for (const auto& make : detailed)
      phases.push_back(make());
    return make_sequence(std::move(phases));
  };
  return x;
}

// NCCL's NVLSTree all-reduce (src/device/all_reduce.h, runTreeSplit over
// NVLS), as aggregated flows. Inside each node every GPU's buffer goes into
// the NVSwitch, which hands the reduced 1/R of it to each of the node's R
// heads (one per NIC); each head runs a double binary tree over the nodes
// on its rail (S/2R per tree and direction); the heads push the result back
// into the switch, which multicasts it to every GPU. Everything is one
// pipeline, so the phases overlap: the time is the busiest link's load plus
// the pipeline's fill, chunk by chunk along the path
//   GPU -> switch -> head -> (h hops up) -> (h hops down) -> head -> switch -> GPU,
// with NCCL's chunk size (nvls_tree_chunk_bytes) over channels x heads
// streams. The fill is what makes mid-size all-reduces lose bandwidth with
// the node count (log2 of it) in NVIDIA's NVLSTree scans.
Expansion nvls_tree_expansion(const GroupLayout& layout, double bytes, const ClusterZone& zone) {
  const auto trees = double_binary_trees(layout, zone, false);
  const std::size_t rails = trees.size() / 2;
  Expansion x;
  x.algorithm = CollectiveAlgorithm::nvls_tree;
  x.channels = kNvlsChannels;
  std::vector<FlowRequest> switch_edges, net_edges;
  for (std::size_t k = 0; k < layout.nodes.size(); ++k) {
    const int sw = zone.switch_endpoint(layout.nodes[k]);
    for (int gpu : layout.members[k]) {
      switch_edges.push_back({gpu, sw, bytes / kNvlsPortEfficiency, 0});
      switch_edges.push_back({sw, gpu, bytes / kNvlsPortEfficiency, 0});
    }
    for (std::size_t c = 0; c < rails; ++c) {
      const int head = trees[2 * c].gpus[k];
      const double share = bytes / static_cast<double>(rails) / kNvlsPortEfficiency;
      switch_edges.push_back({sw, head, share, 0});
      switch_edges.push_back({head, sw, share, 0});
    }
  }
  const int height = add_tree_edges(trees, bytes / static_cast<double>(trees.size()), net_edges);
  // Pipeline of K steps of channels x heads chunks: a chunk crosses 2h
  // network hops, each taking 1/K of the busiest NIC's time (net_s), and
  // four switch legs, which together move 2 (S + S/R) per GPU port: twice
  // the port's time per direction (switch_s) over K. The busiest hop is
  // already in the bandwidth term.
  const double ops = static_cast<double>(kNvlsChannels * rails);
  const double chunk = nvls_tree_chunk_bytes(bytes, ops, layout.nodes.size());
  const double chunks = std::max(1.0, std::floor(bytes / (ops * chunk)));
  const double switch_s = bandwidth_term_s(switch_edges, zone);
  const double net_s = bandwidth_term_s(net_edges, zone);
  const double fill_s = (2 * switch_s + 2 * height * net_s - std::max(switch_s, net_s)) / chunks;
  Phase phase;
  phase.latency_s = 4 * max_latency(switch_edges, zone) + 2 * height * max_latency(net_edges, zone);
  phase.edges = std::move(switch_edges);
  phase.edges.insert(phase.edges.end(), net_edges.begin(), net_edges.end());
  const double bandwidth_s = bandwidth_term_s(phase.edges, zone);
  phase.fill_fraction = bandwidth_s > 0 ? fill_s / bandwidth_s : 0;
  x.phases.push_back(std::move(phase));
  return x;
}

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
    // All-to-all as NCCL runs it (nccl-tests' alltoall is one group of
    // ncclSend / ncclRecv to every peer): every pair's transfer is posted at
    // once and they proceed together over NCCL's p2p channels, sharing their
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

bool every_node_has_nvls(const GroupLayout& layout, const ClusterZone& zone) {
  for (int node : layout.nodes)
    if (!zone.has_nvls(node))
      return false;
  return true;
}

// The algorithms that apply to this op and group, NCCL's first.
std::vector<CollectiveAlgorithm> applicable(CollectiveOp op, const GroupLayout& layout,
                                            const ClusterZone& zone) {
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv)
    return {CollectiveAlgorithm::direct};
  if (op == CollectiveOp::broadcast)
    return {CollectiveAlgorithm::ring};
  std::vector<CollectiveAlgorithm> out{CollectiveAlgorithm::ring};
  if (op == CollectiveOp::all_reduce)
    out.push_back(CollectiveAlgorithm::tree);
  const int m = layout.uniform_members();
  const bool nvls = every_node_has_nvls(layout, zone) && (layout.single_node() || m >= 2);
  if (nvls && op == CollectiveOp::all_reduce && !layout.single_node())
    out.push_back(CollectiveAlgorithm::nvls_tree);
  if (nvls)
    out.push_back(CollectiveAlgorithm::nvls);
  if (!layout.single_node() && m >= 2)
    out.push_back(CollectiveAlgorithm::hierarchical);
  return out;
}

// Whether NCCL's tuner would consider the algorithm (src/graph/tuning.cc):
// hierarchical is not an NCCL algorithm; NVLS across nodes (and CollNet)
// needs IB SHARP, which no fabric here offers, so across nodes all-reduce
// chooses among ring, tree and NVLSTree, and all-gather / reduce-scatter run
// rings (PAT needs one GPU per node).
bool tuner_considers(CollectiveAlgorithm algorithm, const GroupLayout& layout) {
  if (algorithm == CollectiveAlgorithm::hierarchical)
    return false;
  return algorithm != CollectiveAlgorithm::nvls || layout.single_node();
}

Expansion expand(CollectiveAlgorithm algorithm, CollectiveOp op, const GroupLayout& layout, double bytes,
                 const ClusterZone& zone) {
  switch (algorithm) {
    case CollectiveAlgorithm::tree:
      return tree_expansion(layout, bytes, zone);
    case CollectiveAlgorithm::nvls:
      return layout.single_node() ? nvls_single_node(op, layout, bytes, zone)
                                  : hierarchical_expansion(op, layout, bytes, zone, true);
    case CollectiveAlgorithm::hierarchical:
      return hierarchical_expansion(op, layout, bytes, zone, false);
    case CollectiveAlgorithm::nvls_tree:
      return nvls_tree_expansion(layout, bytes, zone);
    case CollectiveAlgorithm::direct:
      return direct_expansion(op, layout, bytes, zone);
    case CollectiveAlgorithm::p2p_ring:
      return ring_expansion(op, layout, bytes, zone, algorithm);
    case CollectiveAlgorithm::automatic:
    case CollectiveAlgorithm::ring:
      break;
  }
  return ring_expansion(op, layout, bytes, zone);
}

// Uncontended time of the expansion's flows plus its latency terms.
double estimate(const Expansion& x, const ClusterZone& zone) {
  double total = zone.spec().collectives.launch_latency_s;
  for (const auto& phase : x.phases)
    total += phase.latency_s + phase.fixed_latency_s +
             (1 + phase.fill_fraction) * bandwidth_term_s(phase.edges, zone);
  return total;
}

struct Resolved {
  CollectiveAlgorithm algorithm;
  std::vector<AlgorithmEstimate> estimates;
};

Resolved resolve(const CollectiveRequest& request, const GroupLayout& layout, const ClusterZone& zone,
                 bool want_estimates) {
  // A workload's plain send/recv ring is what it is: no tuning.
  if (request.algorithm == CollectiveAlgorithm::p2p_ring && request.op != CollectiveOp::all_to_all &&
      request.op != CollectiveOp::send_recv)
    return {CollectiveAlgorithm::p2p_ring, {}};
  const auto candidates = applicable(request.op, layout, zone);
  const auto asked = request.algorithm != CollectiveAlgorithm::automatic ? request.algorithm
                                                                         : zone.spec().collectives.algorithm;
  Resolved r{candidates.front(), {}};
  if (candidates.size() == 1 && !want_estimates)
    return r;
  const bool honoured = asked != CollectiveAlgorithm::automatic &&
                        std::find(candidates.begin(), candidates.end(), asked) != candidates.end();
  if (honoured && !want_estimates) {
    r.algorithm = asked;
    return r;
  }
  double best = 0;
  for (auto algorithm : candidates) {
    const double t = estimate(expand(algorithm, request.op, layout, request.bytes, zone), zone);
    r.estimates.push_back({algorithm, t});
    if (!tuner_considers(algorithm, layout))
      continue;
    if (r.estimates.size() == 1 || t < best) {
      best = t;
      r.algorithm = algorithm;
    }
  }
  if (honoured)
    r.algorithm = asked;
  return r;
}

// Why `asked` is not among applicable()'s algorithms, in its terms.
std::string why_not_applicable(CollectiveAlgorithm asked, CollectiveOp op, const GroupLayout& layout,
                               const ClusterZone& zone) {
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv)
    return fmt::format("{} runs as direct point-to-point transfers", workloads::to_string(op));
  if (op == CollectiveOp::broadcast)
    return "broadcast runs as a ring";
  switch (asked) {
    case CollectiveAlgorithm::tree:
      return fmt::format("tree is NCCL's algorithm for all_reduce only, not {}", workloads::to_string(op));
    case CollectiveAlgorithm::nvls:
      if (!every_node_has_nvls(layout, zone))
        return "nvls needs NVLink SHARP in every node's NVSwitch (cluster nvls: true; H100 and later), and "
               "these nodes have none";
      return "nvls across nodes needs at least 2 ranks on every node";
    case CollectiveAlgorithm::hierarchical:
      return layout.single_node() ? "hierarchical needs ranks on several nodes"
                                  : "hierarchical needs the same number of ranks, at least 2, on every node";
    default:
      return fmt::format("{} does not apply here", to_string(asked));
  }
}

}  // namespace

std::string algorithm_unavailable_reason(const CollectiveRequest& request, const ClusterZone& zone) {
  const auto asked = request.algorithm != CollectiveAlgorithm::automatic ? request.algorithm
                                                                         : zone.spec().collectives.algorithm;
  if (asked == CollectiveAlgorithm::automatic || asked == CollectiveAlgorithm::p2p_ring)
    return "";
  const auto layout = layout_of(request.gpus, zone);
  const auto candidates = applicable(request.op, layout, zone);
  if (std::find(candidates.begin(), candidates.end(), asked) != candidates.end())
    return "";
  return why_not_applicable(asked, request.op, layout, zone);
}

std::vector<AlgorithmEstimate> estimate_algorithms(const CollectiveRequest& request,
                                                   const ClusterZone& zone) {
  return resolve(request, layout_of(request.gpus, zone), zone, true).estimates;
}

CollectiveAlgorithm resolve_algorithm(const CollectiveRequest& request, const ClusterZone& zone) {
  return resolve(request, layout_of(request.gpus, zone), zone, false).algorithm;
}

platforms::RingProtocol ring_protocol(const CollectiveRequest& request, const ClusterZone& zone) {
  const auto layout = layout_of(request.gpus, zone);
  const auto algorithm = resolve(request, layout, zone, false).algorithm;
  return expand(algorithm, request.op, layout, request.bytes, zone).protocol;
}

CollectivePlan make_collective(const CollectiveRequest& request, const ClusterZone& zone,
                               std::optional<platforms::Fidelity> fidelity) {
  if (request.gpus.size() < 2)
    throw std::invalid_argument("a collective needs at least two GPUs");
  auto config = zone.spec().collectives;
  if (fidelity)
    config.fidelity = *fidelity;
  const auto layout = layout_of(request.gpus, zone);
  const auto algorithm = resolve(request, layout, zone, false).algorithm;
  const int fold = std::max(request.fold, 1);

  const Expansion single = expand(algorithm, request.op, layout, request.bytes, zone);
  const Expansion pass =
      fold > 1 ? expand(algorithm, request.op, layout, request.bytes * fold, zone) : single;

  CollectivePlan plan;
  plan.choice = {algorithm, single.channels, config.fidelity};
  plan.extra_latency_s = config.launch_latency_s;
  for (const auto& phase : single.phases)
    plan.extra_latency_s += phase.fixed_latency_s;
  if (fold > 1) {
    double pass_latency_s = config.launch_latency_s;
    for (const auto& phase : single.phases)
      pass_latency_s += phase.latency_s + phase.fixed_latency_s;
    plan.extra_latency_s += (fold - 1) * pass_latency_s;
  }
  // The automatic representation runs the detailed steps (the replay
  // decides whether SimGrid sees them as flows); an algorithm without
  // detailed steps (NVLSTree: its pipeline is in its closed form) runs fast.
  if ((config.fidelity != Fidelity::fast && pass.detailed) || pass.fast_is_detailed) {
    plan.flows = pass.detailed();
    return plan;
  }
  // Fast: one flow per edge with its whole volume, phase after phase; the
  // latency terms beyond the one each flow carries, and the pipelines' fill,
  // are added at the end.
  std::vector<std::unique_ptr<Collective>> phases;
  for (const auto& phase : pass.phases) {
    phases.push_back(make_flow_set(phase.edges));
    plan.extra_latency_s += phase.latency_s - max_latency(phase.edges, zone) +
                            phase.fill_fraction * bandwidth_term_s(phase.edges, zone);
  }
  plan.flows = phases.size() == 1 ? std::move(phases.front()) : make_sequence(std::move(phases));
  return plan;
}

}  // namespace trainsim::sim
