#include "platforms/fabrics/ecmp.hpp"

namespace trainsim::platforms {
namespace {

// SplitMix64's finaliser: a fixed, portable mix (std::hash is neither), so
// the same seed gives the same planes on every machine.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::string_view to_string(EcmpHash hash) {
  return hash == EcmpHash::seeded ? "seeded" : "spread";
}

std::vector<int> ecmp_planes(const EcmpSpec& ecmp, std::uint64_t pair_key, int source_port) {
  std::vector<int> planes(static_cast<std::size_t>(ecmp.flows_per_pair), 0);
  const auto p = static_cast<std::uint64_t>(ecmp.planes);
  for (int k = 0; k < ecmp.flows_per_pair; ++k) {
    const auto sub = static_cast<std::uint64_t>(k);
    planes[static_cast<std::size_t>(k)] =
        ecmp.hash == EcmpHash::seeded
            ? static_cast<int>(mix64(mix64(mix64(ecmp.seed) ^ pair_key) ^ sub) % p)
            : static_cast<int>(
                  (static_cast<std::uint64_t>(source_port) * static_cast<std::uint64_t>(ecmp.flows_per_pair) +
                   sub) %
                  p);
  }
  return planes;
}

std::vector<double> ecmp_bytes_per_plane(const EcmpSpec& ecmp, const std::vector<int>& planes, double bytes) {
  std::vector<double> per_plane(static_cast<std::size_t>(ecmp.planes), 0.0);
  for (const int plane : planes)
    per_plane[static_cast<std::size_t>(plane)] += bytes / static_cast<double>(planes.size());
  return per_plane;
}

}  // namespace trainsim::platforms
