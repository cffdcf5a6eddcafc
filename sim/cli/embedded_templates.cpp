#include "sim/cli/embedded_templates.hpp"

#include <stdexcept>

namespace trainsim::cli {

std::string_view vtrain_a100_template() {
  for (const auto& file : embedded_templates())
    if (file.path == "scenarios/validation/vtrain-a100.yaml")
      return file.text;
  throw std::logic_error("scenarios/validation/vtrain-a100.yaml is not built in");
}

}  // namespace trainsim::cli
