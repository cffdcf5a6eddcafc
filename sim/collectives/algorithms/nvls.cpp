// NCCL's NVLS: in-switch reduction (NVLink SHARP). Inside an NVLink domain
// (a node, or the 72 GPUs of a GB200 NVL72) every GPU pushes its buffer into
// the NVSwitch, which reduces and multicasts the result back (all-reduce),
// or keeps 1/m per GPU (reduce-scatter), or only multicasts (all-gather).
// Across domains the same in-switch phases frame a ring per rail between
// them (NCCL needs IB SHARP for that, so its tuner does not weigh it; it
// runs when asked for).
#include <fmt/format.h>

#include <algorithm>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

// NCCL's latency of an NVLS (Simple protocol) collective inside a node:
// hwLatencies[NVLINK][NVLS][SIMPLE] = 25 us in src/graph/tuning.cc. It is
// what keeps NCCL on rings below about 2 MiB on 8 H100s (dgxc-benchmarking
// sample: 27.4 us at 1 MiB, 42.2 us at 2 MiB with NVLS).
constexpr double kNvlsLatency_s = 25e-6;

Expansion nvls_in_one_domain(CollectiveOp op, const GroupLayout& layout, double bytes,
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

Expansion nvls_expansion(CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone) {
  if (layout.single_domain())
    return nvls_in_one_domain(op, layout, bytes, zone);
  const IntraNodePhase in_switch = [&](CollectiveOp intra_op, Expansion& x, DetailedPhases& detailed) {
    std::vector<SwitchGroup> groups;
    int chunks = 1;
    double up = 0, down = 0;
    x.phases.push_back(switch_phase(intra_op, layout, bytes, zone, groups, chunks, up, down));
    detailed.push_back(
        [groups, chunks, up, down]() { return make_switch_pipeline(groups, chunks, up, down); });
  };
  return hierarchical_phases(op, layout, bytes, zone, CollectiveAlgorithm::nvls, in_switch);
}

std::string nvls_unavailable(CollectiveOp /*op*/, const GroupLayout& layout, const ClusterZone& zone) {
  if (!every_domain_has_nvls(layout, zone))
    return "nvls needs NVLink SHARP in every node's NVSwitch (cluster nvls: true; H100 and later), and "
           "these nodes have none";
  if (!layout.single_domain() && layout.uniform_members() < 2)
    return "nvls across nodes needs at least 2 ranks on every node";
  return "";
}

// Across nodes NVLS needs IB SHARP (CollNet), which no fabric here offers.
bool nvls_considered(const GroupLayout& layout) {
  return layout.single_domain();
}

}  // namespace

bool every_domain_has_nvls(const GroupLayout& layout, const ClusterZone& zone) {
  for (int domain : layout.domains)
    if (!zone.has_nvls(domain))
      return false;
  return true;
}

double nvls_efficiency(const GroupLayout& layout, const ClusterZone& zone) {
  double efficiency = 1;
  for (const auto& members : layout.members)
    efficiency = std::min(efficiency, zone.group_of_node(zone.node_of(members.front())).nvls_efficiency);
  return efficiency;
}

Phase switch_phase(CollectiveOp op, const GroupLayout& layout, double bytes, const ClusterZone& zone,
                   std::vector<SwitchGroup>& groups, int& chunks, double& up_chunk, double& down_chunk) {
  const int m = layout.uniform_members();
  // Multimem transfers reach only part of the port's rate: they carry
  // correspondingly more bytes on it.
  const double efficiency = nvls_efficiency(layout, zone);
  const double up = (op == CollectiveOp::all_gather ? bytes / m : bytes) / efficiency;
  const double down = (op == CollectiveOp::reduce_scatter ? bytes / m : bytes) / efficiency;
  Phase phase;
  for (std::size_t k = 0; k < layout.domains.size(); ++k) {
    SwitchGroup g{zone.switch_endpoint(layout.domains[k]), layout.members[k]};
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

AlgorithmTraits nvls_traits() {
  return {.algorithm = CollectiveAlgorithm::nvls,
          .ops = {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather},
          .only_when_asked = false,
          .unavailable = nvls_unavailable,
          .tuner_considers = nvls_considered,
          .expand = nvls_expansion};
}

}  // namespace trainsim::sim
