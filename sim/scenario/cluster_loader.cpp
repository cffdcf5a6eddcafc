#include "sim/scenario/cluster_loader.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "platforms/input_file.hpp"
#include "platforms/presets.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {

namespace {

platforms::ClusterSpec read_cluster(YAML::Node root, const std::string& file,
                                    const std::vector<std::string>& overrides) {
  platforms::InputSource source(file);
  platforms::ErrorList errors;
  for (const auto& o : overrides)
    platforms::apply_override(root, o, source, errors);
  errors.throw_if_any();
  Scenario scenario;
  platforms::MapReader top(root, "", source, errors, &scenario_keys());
  if (auto cluster = top.map("cluster"))
    read_cluster_section(*cluster, scenario);
  else
    top.error("cluster", "missing section (expected a map with a preset, or gpu, nodes, ...)");
  // The rest of a scenario file (model, plan, ...) is not this command's business.
  errors.throw_if_any();
  return scenario.cluster;
}

}  // namespace

platforms::ClusterSpec parse_cluster_text(const std::string& yaml, const std::string& file,
                                          const std::vector<std::string>& overrides) {
  const YAML::Node root = platforms::load_yaml_document(yaml, file);
  if (!root.IsMap())
    throw platforms::InputError({fmt::format("{}: expected a YAML map with a `cluster` section", file)});
  return read_cluster(root, file, overrides);
}

platforms::ClusterSpec load_cluster(const std::string& preset_or_file,
                                    const std::vector<std::string>& overrides) {
  if (platforms::find_cluster_preset(preset_or_file) != nullptr) {
    YAML::Node root(YAML::NodeType::Map);
    root["cluster"]["preset"] = preset_or_file;
    return read_cluster(root, fmt::format("--cluster {}", preset_or_file), overrides);
  }
  std::error_code ec;
  if (!std::filesystem::exists(preset_or_file, ec))
    throw platforms::InputError(
        {fmt::format("--cluster {}: neither a cluster preset (expected one of {}) nor a readable "
                     "YAML file with a `cluster` section",
                     preset_or_file, platforms::cluster_preset_names())});
  return parse_cluster_text(
      platforms::read_input_file(preset_or_file, "cluster file", platforms::kMaxYamlInputBytes),
      preset_or_file, overrides);
}

}  // namespace trainsim::scenario
