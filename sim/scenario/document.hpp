#pragma once
// Loading a scenario from a YAML document that was already parsed and edited
// in memory: a sweep point is the study file's document with the point's
// values set (their YAML nodes keep their file:line marks) and the --set
// overrides applied (recorded in the platforms::InputSource), so every error still names
// where the bad value came from.
#include <yaml-cpp/yaml.h>

#include "platforms/yaml_reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {

// Parses and validates `root` as a scenario. Throws platforms::InputError for malformed
// input, and its subclass InfeasiblePlan (sim/scenario/infeasible_plan.hpp) when the
// input is well formed but the plan cannot run.
Scenario load_scenario_document(const YAML::Node& root, const platforms::InputSource& source,
                                const LoadOptions& options = {});

// The top-level keys that hold a study rather than a scenario (`sweep`,
// `variants`); `trainsim run` rejects them with a pointer to the right command.
inline constexpr const char* kStudySectionKeys[] = {"sweep", "variants"};

}  // namespace trainsim::scenario
