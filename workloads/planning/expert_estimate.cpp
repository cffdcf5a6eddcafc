#include "workloads/planning/expert_estimate.hpp"

#include <algorithm>
#include <vector>

#include "workloads/expert_parallel.hpp"
#include "workloads/moe_dispatch.hpp"

namespace trainsim::workloads {
namespace {

// A GPU's NVLink bandwidth towards `peers` GPUs of its node: its port, or
// on a full mesh its links to them (one of the g - 1 each).
double expert_nvlink_Bps(const platforms::NodeGroup& g, int peers) {
  if (g.shape == platforms::NodeShape::pcie)
    return g.pcie.effective_Bps();
  if (g.shape == platforms::NodeShape::full_mesh && g.gpus_per_node > 1)
    return g.nvlink.effective_Bps() * std::max(1, peers) / (g.gpus_per_node - 1);
  return g.nvlink.effective_Bps();
}

}  // namespace

ExpertExchangeEstimate expert_exchange_estimate(const ModelSpec& model, const ParallelPlan& plan,
                                                const platforms::ClusterSpec& cluster, int stage) {
  ExpertExchangeEstimate e;
  if (!model.is_moe() || plan.ep <= 1)
    return e;
  // The stage's first EP group (expert-TP rank 0): ep consecutive dp x cp
  // positions of TP rank 0, or with expert TP below tp ranks expert_tp
  // apart across the TP ranks; deepep with 1 < expert_tp < tp: the first
  // expert-TP x EP block (moe_dispatch_groups).
  const std::vector<int> members = moe_dispatch_groups(model, plan, stage).front();
  const int n = static_cast<int>(members.size());
  std::vector<int> domains;
  for (int gpu : members)
    domains.push_back(cluster.locate(gpu).domain);
  // The members sharing the first one's NVLink domain.
  const int local = static_cast<int>(std::count(domains.begin(), domains.end(), domains.front()));
  const auto& group = cluster.group_of(members.front());
  const int gpus_per_nic = std::max(1, group.gpus_per_node / std::max(1, group.nics_per_node));
  const double nic_Bps = group.nic.bandwidth_Bps * cluster.fabric.efficiency / gpus_per_nic;
  const double nvlink_Bps = expert_nvlink_Bps(group, local - 1);

  if (plan.moe_dispatcher == MoeDispatcher::deepep) {
    const EpNodes nodes = ep_nodes_of(domains);
    const DeepepTraffic t = deepep_traffic(model, plan, nodes, {DeepepLayer{}}, 1);
    const auto at = [n](const std::vector<double>& m, int i, int j) {
      return m[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)];
    };
    double remote = 0, same_node = 0;
    for (int j = 1; j < n; ++j) {
      // Rank 0's tokens to j, and j's outputs of them back (the combine's
      // sender is j: by symmetry rank 0 returns as much to each peer).
      const double bytes = at(t.dispatch, 0, j) + at(t.combine, j, 0);
      if (domains[static_cast<std::size_t>(j)] == domains.front())
        same_node += bytes;
      else
        remote += bytes;
    }
    e.remote_bytes = remote * t.node_share;
    e.nvlink_bytes = same_node + remote * (local - 1) / std::max(1, local);
  } else {
    const double pass = ep_all_to_all_bytes(model, plan);
    e.remote_bytes = 2 * pass * (n - local) / n;
    e.nvlink_bytes = 2 * pass * (local - 1) / n;
  }
  const bool crosses = local < n;
  const double latency =
      crosses ? group.nic.latency_s + cluster.fabric.spine_latency_s : group.nvlink.latency_s;
  const double links = std::max(crosses ? e.remote_bytes / nic_Bps : 0.0, e.nvlink_bytes / nvlink_Bps);
  e.transfer_s = links;
  e.pass_pair_s = links + 2 * (latency + cluster.collectives.launch_latency_s);
  return e;
}

}  // namespace trainsim::workloads
