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
#include <algorithm>
#include <cmath>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

// NCCL's NVLS resources on Hopper (NCCL 2.30 src/transport/nvls.cc,
// ncclNvlsTuning): 16 channels on SM90, chunks of NCCL_NVLS_CHUNKSIZE =
// 128 KiB, NVLSTree chunks capped at 64 KiB from 4 nodes up
// (treeMaxChunkSize), one NVLS head per NIC of the node (its rails' GPUs).
constexpr int kNvlsChannels = 16;
constexpr double kNvlsChunkBytes = 128.0 * 1024;
constexpr double kNvlsTreeChunkBytesFrom4Nodes = 64.0 * 1024;

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

Expansion nvls_tree_expansion(CollectiveOp /*op*/, const GroupLayout& layout, double bytes,
                              const ClusterZone& zone) {
  const auto trees = double_binary_trees(layout, zone, false);
  const std::size_t rails = trees.size() / 2;
  Expansion x;
  x.algorithm = CollectiveAlgorithm::nvls_tree;
  x.channels = kNvlsChannels;
  const double efficiency = nvls_efficiency(layout, zone);
  std::vector<FlowRequest> switch_edges, net_edges;
  for (std::size_t k = 0; k < layout.domains.size(); ++k) {
    const int sw = zone.switch_endpoint(layout.domains[k]);
    for (int gpu : layout.members[k]) {
      switch_edges.push_back({gpu, sw, bytes / efficiency, 0});
      switch_edges.push_back({sw, gpu, bytes / efficiency, 0});
    }
    for (std::size_t c = 0; c < rails; ++c) {
      const int head = trees[2 * c].gpus[k];
      const double share = bytes / static_cast<double>(rails) / efficiency;
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
  const double chunk = nvls_tree_chunk_bytes(bytes, ops, layout.domains.size());
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

std::string nvls_tree_unavailable(CollectiveOp /*op*/, const GroupLayout& layout, const ClusterZone& zone) {
  if (!every_domain_has_nvls(layout, zone))
    return "nvls_tree needs NVLink SHARP in every node's NVSwitch (cluster nvls: true; H100 and later), and "
           "these nodes have none";
  if (layout.single_domain())
    return "nvls_tree runs across nodes, and this group is on one node (nvls runs there)";
  if (layout.uniform_members() < 2)
    return "nvls_tree needs the same number of ranks, at least 2, on every node";
  return "";
}

}  // namespace

AlgorithmTraits nvls_tree_traits() {
  return {.algorithm = CollectiveAlgorithm::nvls_tree,
          .ops = {CollectiveOp::all_reduce},
          .only_when_asked = false,
          .unavailable = nvls_tree_unavailable,
          .tuner_considers = always_weighed,
          .expand = nvls_tree_expansion};
}

}  // namespace trainsim::sim
