#pragma once
// A scenario: the cluster, the model and the parallel plan of one what-if,
// loaded from YAML, validated, and ready to simulate.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::sim {

struct Scenario {
  std::string name;
  std::string file;
  std::uint64_t seed = 1;
  platforms::ClusterSpec cluster;
  workloads::ModelSpec model;
  workloads::ParallelPlan plan;
  // Overrides every GPU's matmul efficiency in the cost model when set.
  std::optional<double> compute_efficiency;
};

// Reads `path`, applies the `--set KEY=VALUE` overrides in order, then parses
// and validates everything. Throws InputError listing every problem found.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from YAML text (tests; `file` names it in messages).
Scenario parse_scenario_text(const std::string& yaml, const std::string& file,
                             const std::vector<std::string>& overrides = {});

}  // namespace trainsim::sim
