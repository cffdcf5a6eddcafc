// What an expansion costs on the platform's real routes: the latency and
// busiest-link terms that the tuner's estimates, the pipelines' chunking and
// the fast fidelity's extra latency are built from.
#include "sim/collectives/expansion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {

std::string available_on_any_group(workloads::CollectiveOp /*op*/, const GroupLayout& /*layout*/,
                                   const ClusterZone& /*zone*/) {
  return "";
}

bool always_weighed(const GroupLayout& /*layout*/) {
  return true;
}

double max_latency(const std::vector<FlowRequest>& edges, const ClusterZone& zone) {
  double latency = 0;
  for (const auto& e : edges)
    latency = std::max(latency, zone.latency_s(e.src, e.dst));
  return latency;
}

double bandwidth_term_s(const std::vector<FlowRequest>& edges, const ClusterZone& zone) {
  // Every (link direction, bytes) crossing in the order crossed, sorted by
  // direction and then by that order: each direction's load is summed in
  // the order the edges load it.
  struct Crossing {
    std::uint64_t key;  // direction << 32 | order
    double bytes;
  };
  std::vector<Crossing> crossings;
  crossings.reserve(edges.size() * 4);
  std::vector<std::uint32_t> route;
  for (const auto& e : edges) {
    route.clear();
    zone.route_directions(e.src, e.dst, route);
    for (const auto d : route)
      crossings.push_back({static_cast<std::uint64_t>(d) << 32 | crossings.size(), e.bytes});
  }
  std::sort(crossings.begin(), crossings.end(),
            [](const Crossing& a, const Crossing& b) { return a.key < b.key; });
  double worst = 0;
  for (std::size_t i = 0; i < crossings.size();) {
    const auto d = static_cast<std::uint32_t>(crossings[i].key >> 32);
    double load = 0;
    for (; i < crossings.size() && static_cast<std::uint32_t>(crossings[i].key >> 32) == d; ++i)
      load += crossings[i].bytes;
    worst = std::max(worst, load / zone.direction(d)->get_bandwidth());
  }
  return worst;
}

// With one chunk in flight per edge, each chunk pays the hop latency:
// (depth + K - 1)(latency + T/K) for a bandwidth term T. NCCL hides that
// latency behind its in-flight slices; the flow model instead takes the K
// that minimises this time, sqrt((depth - 1) T / latency), capped by
// collectives.max_chunks.
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

void set_pipeline(Phase& phase, int depth, int chunks, double latency_s) {
  phase.latency_s = (depth + chunks - 1) * latency_s;
  phase.fill_fraction = static_cast<double>(std::max(depth - 1, 0)) / chunks;
}

double estimate(const Expansion& x, const ClusterZone& zone) {
  double total = zone.spec().collectives.launch_latency_s;
  for (const auto& phase : x.phases)
    total += phase.latency_s + phase.fixed_latency_s +
             (1 + phase.fill_fraction) * bandwidth_term_s(phase.edges, zone);
  return total;
}

}  // namespace trainsim::sim
