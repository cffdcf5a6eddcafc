#pragma once
// A rule broken by a typed value: the dotted key a user would change
// ("plan.tp", or a section such as "plan") and what is wrong, with the bad
// value and what was expected. Typed checks return them without knowing
// where the value came from; the input layer (the YAML reader with its
// --set overrides, plan search, the balance search) turns the key into a
// location (platforms/yaml_reader.hpp: locate_problem).
#include <string>

namespace trainsim::platforms {

struct Problem {
  std::string key;
  std::string message;
};

}  // namespace trainsim::platforms
