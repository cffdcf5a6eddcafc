#include "platforms/fabric_layout.hpp"

#include <stdexcept>

namespace trainsim::platforms {

const std::vector<FabricKind>& fabric_table() {
  static const std::vector<FabricKind> table = [] {
    std::vector<FabricKind> t{{FabricTopology::single_switch, "single_switch", make_single_switch},
                              {FabricTopology::fat_tree, "fat_tree", make_fat_tree},
                              {FabricTopology::rail_optimised, "rail_optimised", make_rail_optimised},
                              {FabricTopology::dragonfly, "dragonfly", make_dragonfly},
                              {FabricTopology::torus, "torus", make_torus}};
    for (std::size_t i = 0; i < t.size(); ++i)
      if (static_cast<std::size_t>(t[i].topology) != i)
        throw std::logic_error("fabric_table: entries out of FabricTopology order");
    return t;
  }();
  return table;
}

std::unique_ptr<FabricLayout> make_fabric_layout(const ClusterSpec& spec) {
  return fabric_table().at(static_cast<std::size_t>(spec.fabric.topology)).make(spec);
}

std::string FabricLayout::link_images(const std::vector<int>&, std::vector<std::size_t>&) const {
  return "its automorphisms are not derived yet";
}

std::string_view to_string(FabricTopology topology) {
  return fabric_table().at(static_cast<std::size_t>(topology)).name;
}

}  // namespace trainsim::platforms
