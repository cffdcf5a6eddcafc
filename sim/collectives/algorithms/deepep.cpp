// DeepEP's MoE dispatch and combine (github.com/deepseek-ai/DeepEP, the
// "normal" kernels DeepSeek-V3 trains with; Section 3.2.2 of its report):
// an all-to-all that crosses nodes once per token and destination node.
//
//      node a                      node b
//   +-----------+   RDMA (rail l)  +-----------+
//   | i (l) ----+----------------->+-> f (l)   |   f: the GPU of i's local
//   |           |                  |   |  \    |      index l on node b
//   | i -> k    |                  |   v   v   |   NVLink forwarding to
//   | (NVLink)  |                  |   j   j'  |   the node's GPUs j, j'
//   +-----------+                  +-----------+
//
// Dispatch: GPU i sends a token once over RDMA to each other node holding
// any of its experts, to the GPU f of i's local index there, which forwards
// it over NVLink to each GPU of that node holding any (not to itself);
// inside i's own node it sends over NVLink directly. Combine is the mirror:
// each GPU returns its outputs for i's tokens over NVLink to f, f sends
// them on to i over RDMA. DeepEP pipelines the relay in chunks, so the
// RDMA and NVLink transfers run at once (one flow set; the relay's fill of
// one chunk is not modelled), and the dispatch and combine of a pass pair
// share the flow set as the pairwise all-to-all's do.
//
// The bytes come from the exchange (workloads::Exchange: dispatch and
// combine per pair, and the node share, which counts a token once per node;
// workloads/moe_dispatch.hpp). Asked for by plan.moe_dispatcher (never by
// `auto`: NCCL does not run it).
#include <map>
#include <utility>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

std::string deepep_unavailable(CollectiveOp /*op*/, const GroupLayout& layout, const ClusterZone& /*zone*/) {
  if (layout.uniform_members() < 1)
    return "deepep needs the same number of ranks on every node";
  return "";
}

bool deepep_considered(const GroupLayout& /*layout*/) {
  return false;
}

// The relayed flows of one exchange; dispatch and combine n x n in group
// order (combine[i n + j]: what j returns to i).
// node_shares: per node of the group (members in order, consecutive per
// node), empty for node_share on every node.
Expansion relayed_expansion(const GroupLayout& layout, const std::vector<double>& dispatch,
                            const std::vector<double>& combine, double node_share,
                            const std::vector<double>& node_shares, const ClusterZone& zone) {
  const std::size_t n = layout.gpus.size();
  if (layout.uniform_members() < 1)
    throw std::logic_error("deepep on a group with unequal ranks per node (the loader refuses it)");
  // Each member's domain and local index.
  std::map<int, std::pair<std::size_t, std::size_t>> where;
  for (std::size_t d = 0; d < layout.members.size(); ++d)
    for (std::size_t l = 0; l < layout.members[d].size(); ++l)
      where[layout.members[d][l]] = {d, l};
  const std::size_t per_node = n / layout.members.size();
  std::map<std::pair<int, int>, double> rdma;
  std::map<std::pair<int, int>, double> nvlink;
  auto add = [](std::map<std::pair<int, int>, double>& edges, int src, int dst, double bytes) {
    if (bytes > 0 && src != dst)
      edges[{src, dst}] += bytes;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const int gi = layout.gpus[i];
    const auto [di, li] = where.at(gi);
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j)
        continue;
      const int gj = layout.gpus[j];
      const double out = dispatch[i * n + j];
      const double back = combine.empty() ? 0.0 : combine[i * n + j];
      const std::size_t dj = where.at(gj).first;
      if (di == dj) {
        add(nvlink, gi, gj, out);
        add(nvlink, gj, gi, back);
        continue;
      }
      const int relay = layout.members[dj][li];
      // The destination's node in group order (consecutive members a node).
      const double share = node_shares.empty() ? node_share : node_shares.at(j / per_node);
      add(rdma, gi, relay, share * out);
      add(nvlink, relay, gj, out);
      add(nvlink, gj, relay, back);
      add(rdma, relay, gi, share * back);
    }
  }
  Expansion x;
  x.algorithm = CollectiveAlgorithm::deepep;
  Phase phase;
  std::vector<FlowRequest> across;
  std::vector<FlowRequest> within;
  for (const auto& [edge, bytes] : rdma)
    across.push_back({edge.first, edge.second, bytes, 0});
  for (const auto& [edge, bytes] : nvlink)
    within.push_back({edge.first, edge.second, bytes, 0});
  // A relayed token pays both hops' latency.
  phase.latency_s = max_latency(across, zone) + max_latency(within, zone);
  phase.edges = std::move(across);
  phase.edges.insert(phase.edges.end(), within.begin(), within.end());
  x.detailed = [edges = phase.edges]() { return make_flow_set(edges); };
  x.fast_is_detailed = true;
  x.phases.push_back(std::move(phase));
  return x;
}

// `bytes` per member spread evenly (each pair bytes / n), relayed: a
// hierarchical all-to-all without the per-node deduplication (the tuner's
// estimate, `trainsim collective`).
Expansion deepep_expansion(CollectiveOp /*op*/, const GroupLayout& layout, double bytes,
                           const ClusterZone& zone) {
  const std::size_t n = layout.gpus.size();
  std::vector<double> even(n * n, bytes / static_cast<double>(n));
  for (std::size_t i = 0; i < n; ++i)
    even[i * n + i] = 0;
  return relayed_expansion(layout, even, {}, 1.0, {}, zone);
}

Expansion deepep_uneven_expansion(const GroupLayout& layout, const workloads::Exchange& exchange,
                                  const ClusterZone& zone) {
  if (exchange.dispatch_bytes.empty())  // a plain uneven exchange: all of it one way
    return relayed_expansion(layout, exchange.send_bytes, {}, 1.0, {}, zone);
  return relayed_expansion(layout, exchange.dispatch_bytes, exchange.combine_bytes, exchange.node_share,
                           exchange.node_shares, zone);
}

}  // namespace

AlgorithmTraits deepep_traits() {
  return {.algorithm = CollectiveAlgorithm::deepep,
          .ops = {CollectiveOp::all_to_all},
          .only_when_asked = true,
          .unavailable = deepep_unavailable,
          .tuner_considers = deepep_considered,
          .expand = deepep_expansion,
          .expand_uneven = deepep_uneven_expansion};
}

}  // namespace trainsim::sim
