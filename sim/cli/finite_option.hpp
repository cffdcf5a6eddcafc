#pragma once
// CLI11's Range lets "nan" through (every comparison with NaN is false), so
// `--max-mape nan` would turn the gate off silently. Every floating-point
// option checks this too: `->check(finite_number() & CLI::Range(a, b))`.
#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace trainsim::cli {

inline CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          std::size_t used = 0;
          const double value = std::stod(text, &used);
          if (used == text.size() && std::isfinite(value))
            return {};
        } catch (const std::exception&) {
        }
        return "'" + text + "' is not a finite number";
      },
      "FINITE");
}

}  // namespace trainsim::cli
