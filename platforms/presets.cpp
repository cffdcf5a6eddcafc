#include "platforms/presets.hpp"

#include "platforms/embedded_files.hpp"

namespace trainsim::platforms {

const std::vector<PresetFile>& cluster_presets() {
  static const std::vector<PresetFile> presets = [] {
    std::vector<PresetFile> out;
    for (const auto& file : embedded_preset_files()) {
      // "platforms/presets/dgx-a100-hdr.yaml" -> "dgx-a100-hdr"
      auto name = file.path.substr(file.path.rfind('/') + 1);
      name = name.substr(0, name.rfind('.'));
      out.push_back({name, file.path, file.text});
    }
    return out;
  }();
  return presets;
}

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
