#pragma once
// Every problem the scenario loader reports for a text, one per line, or ""
// when the text loads: the key tests find file, line, key and value in it.
#include <string>

#include "platforms/input_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::testing {

inline std::string loader_problems(const std::string& yaml, const std::string& file) {
  try {
    scenario::parse_scenario_text(yaml, file);
  } catch (const platforms::InputError& e) {
    std::string all;
    for (const auto& p : e.problems())
      all += p + "\n";
    return all;
  }
  return "";
}

}  // namespace trainsim::testing
