#pragma once
// A cluster on its own, for commands that need no model or plan
// (`trainsim collective`): a shipped preset by name, or the `cluster` section
// of a YAML file, with `--set cluster.KEY=VALUE` overrides, parsed and
// validated exactly as in a scenario.
#include <string>
#include <vector>

#include "platforms/cluster_spec.hpp"

namespace trainsim::scenario {

// Throws platforms::InputError listing every problem found.
platforms::ClusterSpec load_cluster(const std::string& preset_or_file,
                                    const std::vector<std::string>& overrides = {});
// The same from YAML text holding a `cluster` section (`file` names it in
// messages).
platforms::ClusterSpec parse_cluster_text(const std::string& yaml, const std::string& file,
                                          const std::vector<std::string>& overrides = {});

}  // namespace trainsim::scenario
