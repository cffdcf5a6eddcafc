#include "sim/replay/link_claims.hpp"

#include <algorithm>

namespace trainsim::sim {
void LinkClaims::grow(std::uint32_t link) {
  if (link >= claimed_Bps_.size()) {
    claimed_Bps_.resize(routes_.link_count(), 0.0);
    isolated_.resize(routes_.link_count());
  }
}

void LinkClaims::add_flow(const Route& route, std::vector<workloads::TaskId>& displaced) {
  for (const std::uint32_t link : route.links) {
    grow(link);
    claimed_Bps_[link] += route.bound_Bps;
    auto& isolated = isolated_[link];
    if (!isolated.empty() && claimed_Bps_[link] > routes_.capacity_Bps(link) * (1 + kClaimSlack))
      for (const workloads::TaskId task : isolated)
        if (std::find(displaced.begin(), displaced.end(), task) == displaced.end())
          displaced.push_back(task);
  }
}

void LinkClaims::remove_flow(const Route& route) {
  for (const std::uint32_t link : route.links)
    claimed_Bps_[link] -= route.bound_Bps;
}

void LinkClaims::add_isolated(workloads::TaskId task, const Claims& claims) {
  for (const auto& [link, Bps] : claims) {
    grow(link);
    claimed_Bps_[link] += Bps;
    isolated_[link].push_back(task);
  }
}

void LinkClaims::remove_isolated(workloads::TaskId task, const Claims& claims) {
  for (const auto& [link, Bps] : claims) {
    claimed_Bps_[link] -= Bps;
    auto& isolated = isolated_[link];
    isolated.erase(std::find(isolated.begin(), isolated.end(), task));
  }
}

}  // namespace trainsim::sim
