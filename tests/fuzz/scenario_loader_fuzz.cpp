// Fuzz target: the scenario loader with --set overrides. The input is a
// scenario's YAML text, then (after each NUL byte) one --set assignment.
// Bad input must end in platforms::InputError (exit 1); anything else
// escaping, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "platforms/input_error.hpp"
#include "sim/scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto nul = input.find('\0', start);
    parts.push_back(input.substr(start, nul - start));
    if (nul == std::string::npos)
      break;
    start = nul + 1;
  }
  const std::string yaml = parts.front();
  const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
  try {
    (void)trainsim::scenario::parse_scenario_text(yaml, "fuzz.yaml", overrides, {.check_memory = true});
  } catch (const trainsim::platforms::InputError&) {
  }
  return 0;
}
