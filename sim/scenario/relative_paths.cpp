#include "sim/scenario/relative_paths.hpp"

#include "platforms/key_table.hpp"
#include "sim/scenario/scenario_keys.hpp"

namespace trainsim::scenario {
namespace fs = std::filesystem;
namespace {

void anchor(YAML::Node& map, const platforms::KeyTable& table, const fs::path& folder) {
  if (!map.IsMap())
    return;
  for (auto kv : map) {
    if (!kv.first.IsScalar())
      continue;
    const platforms::KeySpec* spec = table.find(kv.first.Scalar());
    if (spec == nullptr)
      continue;
    YAML::Node value = kv.second;  // shares the document's node
    if (spec->relative_to_file && value.IsScalar()) {
      const fs::path p(value.Scalar());
      if (!p.empty() && p.is_relative())
        value = (folder / p).lexically_normal().string();
    } else if (spec->fields != nullptr && spec->type == platforms::ValueType::map_list &&
               value.IsSequence()) {
      for (auto item : value)
        anchor(item, *spec->fields, folder);
    } else if (spec->fields != nullptr) {
      anchor(value, *spec->fields, folder);
    }
  }
}

}  // namespace

void anchor_relative_paths(YAML::Node& root, const fs::path& folder) {
  anchor(root, scenario_keys(), folder.empty() ? fs::current_path() : fs::absolute(folder));
}

}  // namespace trainsim::scenario
