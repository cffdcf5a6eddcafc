#include "platforms/cluster_spec.hpp"

#include <stdexcept>

namespace trainsim::platforms {

std::string_view to_string(FabricTopology topology) {
  switch (topology) {
    case FabricTopology::single_switch:
      return "single_switch";
    case FabricTopology::fat_tree:
      return "fat_tree";
  }
  return "?";
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
  int first_node = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const int size = groups[g].nodes * groups[g].gpus_per_node;
    if (gpu < size)
      return {static_cast<int>(g), first_node + gpu / groups[g].gpus_per_node, gpu % groups[g].gpus_per_node};
    gpu -= size;
    first_node += groups[g].nodes;
  }
  throw std::out_of_range("GPU rank outside the cluster");
}

}  // namespace trainsim::platforms
