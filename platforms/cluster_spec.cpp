#include "platforms/cluster_spec.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <array>
#include <stdexcept>

namespace trainsim::platforms {

std::string_view to_string(NodeShape shape) {
  switch (shape) {
    case NodeShape::nvswitch:
      return "nvswitch";
    case NodeShape::cube_mesh:
      return "cube_mesh";
    case NodeShape::pcie:
      return "pcie";
    case NodeShape::full_mesh:
      return "full_mesh";
  }
  return "?";
}

std::string_view to_string(FabricTechnology technology) {
  switch (technology) {
    case FabricTechnology::infiniband:
      return "infiniband";
    case FabricTechnology::roce:
      return "roce";
  }
  return "?";
}

int cube_mesh_lanes(int a, int b) {
  // DGX-1 with V100 (nvidia-smi topo -m): two fully connected quads {0..3}
  // and {4..7} joined by i <-> i+4; NV2 marks the pairs with two lanes.
  static constexpr std::array<std::array<int, kCubeMeshGpus>, kCubeMeshGpus> kLanes{{
      {0, 1, 1, 2, 2, 0, 0, 0},
      {1, 0, 2, 1, 0, 2, 0, 0},
      {1, 2, 0, 2, 0, 0, 1, 0},
      {2, 1, 2, 0, 0, 0, 0, 1},
      {2, 0, 0, 0, 0, 1, 1, 2},
      {0, 2, 0, 0, 1, 0, 2, 1},
      {0, 0, 1, 0, 1, 2, 0, 2},
      {0, 0, 0, 1, 2, 1, 2, 0},
  }};
  if (a < 0 || b < 0 || a >= kCubeMeshGpus || b >= kCubeMeshGpus)
    return 0;
  return kLanes[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
}

int ClusterSpec::node_count() const {
  int nodes = 0;
  for (const auto& g : groups)
    nodes += g.nodes;
  return nodes;
}

int ClusterSpec::gpu_count() const {
  int gpus = 0;
  for (const auto& g : groups)
    gpus += g.nodes * g.gpus_per_node;
  return gpus;
}

ClusterSpec::Location ClusterSpec::locate(int gpu) const {
  int first_node = 0, first_domain = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    const int size = group.nodes * group.gpus_per_node;
    if (gpu < size) {
      const int node = gpu / group.gpus_per_node;
      return {static_cast<int>(g), first_node + node, gpu % group.gpus_per_node,
              first_domain + node / group.nodes_per_domain()};
    }
    gpu -= size;
    first_node += group.nodes;
    first_domain += group.domains();
  }
  throw std::out_of_range("GPU rank outside the cluster");
}

int ClusterSpec::domain_of_node(int node) const {
  int first_domain = 0;
  for (const auto& g : groups) {
    if (node < g.nodes)
      return first_domain + node / g.nodes_per_domain();
    node -= g.nodes;
    first_domain += g.domains();
  }
  throw std::out_of_range("node outside the cluster");
}

int ClusterSpec::domain_count() const {
  int domains = 0;
  for (const auto& g : groups)
    domains += g.domains();
  return domains;
}

int ClusterSpec::group_of_node(int node) const {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (node < groups[g].nodes)
      return static_cast<int>(g);
    node -= groups[g].nodes;
  }
  throw std::out_of_range("node outside the cluster");
}

int ClusterSpec::first_gpu_of_node(int node) const {
  int first_gpu = 0;
  for (const auto& g : groups) {
    if (node < g.nodes)
      return first_gpu + node * g.gpus_per_node;
    node -= g.nodes;
    first_gpu += g.nodes * g.gpus_per_node;
  }
  throw std::out_of_range("node outside the cluster");
}

std::string ClusterSpec::gpu_description() const {
  std::vector<std::pair<std::string, int>> types;  // in rank order
  for (const auto& g : groups) {
    auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return t.first == g.gpu.name; });
    if (it == types.end())
      types.emplace_back(g.gpu.name, g.nodes * g.gpus_per_node);
    else
      it->second += g.nodes * g.gpus_per_node;
  }
  if (types.size() == 1)
    return types.front().first;
  std::string out;
  for (const auto& [name, gpus] : types)
    out += fmt::format("{}{} {}", out.empty() ? "" : " + ", gpus, name);
  return out;
}

}  // namespace trainsim::platforms
