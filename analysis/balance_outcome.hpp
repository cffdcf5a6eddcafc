#pragma once
// What `trainsim run --balance auto` found and measured: the even split and
// the balanced partition (layers per virtual stage, micro-batches per
// data-parallel replica), the search's estimates and the simulated
// iteration times of both. summary.json's `balance` block, the terminal
// summary's last lines, and saved in run.trainsim so `trainsim report`
// writes it again.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainsim::analysis {

struct PartitionOutcome {
  std::vector<int> stage_layers{};
  std::vector<int> dp_micro_batches{};
  double estimated_iteration_time_s = 0;  // the search's compute-only estimate
  double iteration_time_s = 0;            // simulated
};

struct BalanceOutcome {
  PartitionOutcome even;
  PartitionOutcome balanced;
  bool searched_dp_shares = false;  // replicas on different GPU types: shares searched too
  // Virtual stages whose layer count the search had to cap to fit in GPU
  // memory (empty when none).
  std::vector<int> memory_capped_stages{};
  // Where the even split's own outputs went, relative to the run directory.
  std::string even_run_dir{};

  // even / balanced iteration time (> 1: the balanced split is faster).
  double speedup() const {
    return balanced.iteration_time_s > 0 ? even.iteration_time_s / balanced.iteration_time_s : 0;
  }
};

nlohmann::ordered_json to_json(const BalanceOutcome& balance);
// Throws nlohmann::json::exception on a malformed object.
BalanceOutcome balance_outcome_from_json(const nlohmann::json& j);

}  // namespace trainsim::analysis
