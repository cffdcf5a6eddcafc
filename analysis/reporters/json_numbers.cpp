#include "analysis/reporters/json_numbers.hpp"

#include <cmath>
#include <cstdint>

namespace trainsim::analysis {

void whole_numbers_as_integers(nlohmann::ordered_json& document) {
  if (document.is_structured()) {
    for (auto& item : document)
      whole_numbers_as_integers(item);
    return;
  }
  if (!document.is_number_float())
    return;
  const double value = document.get<double>();
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0)
    document = static_cast<std::int64_t>(value);
}

}  // namespace trainsim::analysis
