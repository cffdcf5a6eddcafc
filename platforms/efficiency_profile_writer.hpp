#pragma once
// Writing an efficiency profile in the format of platforms/efficiency/*.yaml
// (what parse_efficiency_profile reads): `trainsim calibrate` writes the
// profile it fitted to a trace this way, for a scenario to name
// (cluster.gpu.efficiency_profile).
#include <string>

#include "platforms/efficiency_profile.hpp"

namespace trainsim::platforms {

// The profile as YAML, `comment` (any number of lines) at the top as `#`
// comments. Numbers keep 6 significant digits; parse_efficiency_profile
// reads the text back to the same profile within that.
std::string efficiency_profile_yaml(const EfficiencyProfile& profile, const std::string& comment);

}  // namespace trainsim::platforms
