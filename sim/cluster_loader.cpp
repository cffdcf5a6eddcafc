#include "sim/cluster_loader.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "platforms/presets.hpp"
#include "sim/scenario_sections.hpp"
#include "sim/yaml_reader.hpp"

namespace trainsim::sim {

platforms::ClusterSpec load_cluster(const std::string& preset_or_file,
                                    const std::vector<std::string>& overrides) {
  YAML::Node root;
  std::string file;
  if (platforms::find_cluster_preset(preset_or_file) != nullptr) {
    file = fmt::format("--cluster {}", preset_or_file);
    root = YAML::Node(YAML::NodeType::Map);
    root["cluster"]["preset"] = preset_or_file;
  } else {
    std::ifstream in(preset_or_file);
    if (!in)
      throw InputError(
          {fmt::format("--cluster {}: neither a cluster preset (expected one of {}) nor a readable "
                       "YAML file with a `cluster` section",
                       preset_or_file, platforms::cluster_preset_names())});
    std::stringstream text;
    text << in.rdbuf();
    file = preset_or_file;
    try {
      root = YAML::Load(text.str());
    } catch (const YAML::Exception& e) {
      throw InputError(
          {fmt::format("{}:{}:{}: not valid YAML: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg)});
    }
    if (!root.IsMap() || !root["cluster"])
      throw InputError({fmt::format("{}: expected a YAML map with a `cluster` section", file)});
  }
  InputSource source(file);
  ErrorList errors;
  for (const auto& o : overrides)
    apply_override(root, o, source, errors);
  errors.throw_if_any();

  Scenario scenario;
  MapReader top(root, "", source, errors);
  if (auto cluster = top.map("cluster"))
    read_cluster_section(*cluster, scenario);
  // The rest of a scenario file (model, plan, ...) is not this command's business.
  errors.throw_if_any();
  return scenario.cluster;
}

}  // namespace trainsim::sim
