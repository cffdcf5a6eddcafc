#pragma once
// Shipped cluster presets (platforms/presets/*.yaml). Their text is embedded
// in the binary at build time (cmake/embed_text_files.cmake), so a scenario's
// `cluster.preset: NAME` works from any working directory and the installed
// binary needs no data files. The YAML is parsed by the scenario loader
// (sim/scenario/cluster_section.cpp) exactly like a scenario's own cluster section.
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::platforms {

struct PresetFile {
  std::string_view name;  // "dgx-a100-hdr"
  std::string_view file;  // "platforms/presets/dgx-a100-hdr.yaml", for messages
  std::string_view text;  // the YAML document: a map with one key, `cluster`
};

// Every shipped preset, in the order platforms/CMakeLists.txt lists them.
const std::vector<PresetFile>& cluster_presets();
// Finds a preset by exact name; nullptr when there is none.
const PresetFile* find_cluster_preset(std::string_view name);
// "dgx-a100-hdr, dgx-h100-ndr, ...", for messages and --help.
std::string cluster_preset_names();

}  // namespace trainsim::platforms
