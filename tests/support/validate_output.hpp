#pragma once
// Reads `trainsim validate`'s table as the tests that replay one row need it.
#include <cmath>
#include <regex>
#include <string>

namespace trainsim::testing {

// The error column of the first fit or check row of `trainsim validate`'s
// table (columns: line, set, params, gpus, tp, dp, pp, mb, measured,
// predicted, error), in percent; NaN when there is no such row.
inline double first_row_error_percent(const std::string& out) {
  const std::regex row(R"(\n\s*\d+\s+(?:fit|check)(?:\s+\S+){8}\s+([-+][0-9.]+)%)");
  std::smatch m;
  return std::regex_search(out, m, row) ? std::stod(m[1]) : std::nan("");
}

}  // namespace trainsim::testing
