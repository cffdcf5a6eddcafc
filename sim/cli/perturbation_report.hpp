#pragma once
// What `trainsim run` adds to summary.json and to the printed summary when a
// run has several iterations, several seeds, perturbations or failures:
// the "iterations", "seeds", "perturbations" and "failures" blocks
// (README "Perturbations", docs/perturbations.md).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <vector>

#include "sim/replay/simulation.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::cli {

// One seed's figures, gathered from the child process that ran it.
struct SeedResult {
  std::uint64_t seed = 0;
  std::vector<double> iteration_times_s;
  std::optional<sim::JobFailureResult> failures;  // with a failures section
};

nlohmann::ordered_json perturbation_blocks(const scenario::Scenario& scenario,
                                           const sim::SimulationResult& result,
                                           const std::vector<SeedResult>& seeds);
// Adds the blocks to the summary.json already written in `dir`.
void add_to_summary_json(const std::filesystem::path& dir, const nlohmann::ordered_json& blocks);
// The lines printed under the summary table.
void print_perturbation_summary(std::ostream& out, const nlohmann::ordered_json& blocks);

}  // namespace trainsim::cli
