#include "sim/replay/plan_cache.hpp"

#include <bit>

#include "sim/replay/folded_collective.hpp"

namespace trainsim::sim {

std::size_t PlanCache::KeyHash::operator()(const Key& k) const {
  std::uint64_t h = k.bytes_bits * 0x9E3779B97F4A7C15ULL;
  const auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001B3ULL + (h >> 29); };
  mix(static_cast<std::uint32_t>(k.group));
  mix(static_cast<std::uint32_t>(k.fold));
  mix(static_cast<std::uint64_t>(k.spanning) << 24 | static_cast<std::uint64_t>(k.op) << 16 |
      static_cast<std::uint64_t>(k.algorithm) << 8 | static_cast<std::uint8_t>(k.fidelity));
  return static_cast<std::size_t>(h);
}

CollectivePlan PlanCache::plan(const CollectiveRequest& request, int group, const ClusterZone& zone,
                               std::optional<platforms::Fidelity> fidelity, const ReplicaFold* spanning,
                               std::size_t* remembered_as) {
  const auto planned = [&] {
    CollectivePlan plan = make_collective(request, zone, fidelity);
    if (spanning != nullptr)
      plan.flows = fold_spanning_collective(std::move(plan.flows), *spanning);
    return plan;
  };
  if (remembered_as != nullptr)
    *remembered_as = kNotRemembered;
  if (!remember_ || request.exchange != nullptr)
    return planned();
  const Key key{group,
                request.fold,
                std::bit_cast<std::uint64_t>(request.bytes),
                request.op,
                request.algorithm,
                fidelity ? static_cast<int>(*fidelity) : -1,
                spanning != nullptr};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    it = plans_.emplace(key, Remembered{planned(), plans_.size()}).first;
    by_number_.push_back(&it->second.plan);
  }
  if (remembered_as != nullptr)
    *remembered_as = it->second.number;
  const CollectivePlan& first = it->second.plan;
  CollectivePlan copy;
  if (remembered_as == nullptr)
    copy.flows = first.flows->clone();
  copy.extra_latency_s = first.extra_latency_s;
  copy.choice = first.choice;
  copy.detailed_flows = first.detailed_flows;
  return copy;
}

}  // namespace trainsim::sim
