#include "platforms/presets.hpp"

namespace trainsim::platforms {

const PresetFile* find_cluster_preset(std::string_view name) {
  for (const auto& preset : cluster_presets())
    if (preset.name == name)
      return &preset;
  return nullptr;
}

std::string cluster_preset_names() {
  std::string out;
  for (const auto& preset : cluster_presets()) {
    if (!out.empty())
      out += ", ";
    out += preset.name;
  }
  return out;
}

}  // namespace trainsim::platforms
