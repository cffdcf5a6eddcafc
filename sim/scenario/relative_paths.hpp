#pragma once
// A scenario's paths (the keys marked relative_to_file in its key table:
// workload.chakra, workload.comm_groups) are relative to the folder of the
// file they are written in. A scenario document written into another
// folder (a study's points/ID/scenario.yaml, which its point runs from)
// carries them anchored, or every point would look for the trace beside
// its scenario.yaml.
#include <yaml-cpp/yaml.h>

#include <filesystem>

namespace trainsim::scenario {

// Rewrites each relative path of `root` as the absolute, normalised path
// it names for a file in `folder` (which is made absolute); absolute paths
// and values that are not text stay as they are.
void anchor_relative_paths(YAML::Node& root, const std::filesystem::path& folder);

}  // namespace trainsim::scenario
