#pragma once
// The number policy of machine files (platforms/number_format.hpp) for JSON:
// a whole number is written as an integer ("peak_memory_bytes":
// 15805415424, not 15805415424.0), any other double as the shortest text
// that reads back the same (nlohmann's own). summary.json, results.json and
// plans.json go through it before they are written.
#include <nlohmann/json.hpp>

namespace trainsim::analysis {

// Turns every whole-valued double below 2^53 in `document` into an integer.
void whole_numbers_as_integers(nlohmann::ordered_json& document);

}  // namespace trainsim::analysis
