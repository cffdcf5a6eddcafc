#pragma once
// A measured tokens-per-expert table (model.moe.routing: measured,
// model.moe.routing_file), as CSV:
//
//   # comments and blank lines are skipped
//   layer,expert,tokens
//   3,0,1520
//   3,1,980
//   ...
//   all,0,1200        # `all`: every MoE layer not listed by its own index
//
// `layer` is a model layer index (0-based; an MTP module's layer is
// layers + k) or `all`; `expert` 0 .. experts - 1; `tokens` a count (or any
// non-negative weight: each layer is normalised). Every layer given lists
// every expert once, with some tokens. Which MoE layers must be covered is
// checked against the model (model_section.cpp).
#include <string>
#include <vector>

#include "workloads/expert_routing.hpp"

namespace trainsim::scenario {

struct ExpertLoadsFile {
  std::vector<workloads::MeasuredLayerLoads> layers;
  std::vector<std::string> problems;  // "loads.csv:7: ...", every one found
};

// Reads the table of `path` for a model of `experts` experts per layer.
ExpertLoadsFile read_expert_loads_file(const std::string& path, int experts);

}  // namespace trainsim::scenario
