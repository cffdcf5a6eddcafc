#include "analysis/balance_outcome.hpp"

namespace trainsim::analysis {
namespace {

nlohmann::ordered_json partition_json(const PartitionOutcome& p) {
  return {{"stage_layers", p.stage_layers},
          {"dp_micro_batches", p.dp_micro_batches},
          {"estimated_iteration_time_s", p.estimated_iteration_time_s},
          {"iteration_time_s", p.iteration_time_s}};
}

PartitionOutcome partition_from_json(const nlohmann::json& j) {
  return {.stage_layers = j.at("stage_layers").get<std::vector<int>>(),
          .dp_micro_batches = j.at("dp_micro_batches").get<std::vector<int>>(),
          .estimated_iteration_time_s = j.at("estimated_iteration_time_s").get<double>(),
          .iteration_time_s = j.at("iteration_time_s").get<double>()};
}

}  // namespace

nlohmann::ordered_json to_json(const BalanceOutcome& balance) {
  const double even = balance.even.iteration_time_s, balanced = balance.balanced.iteration_time_s;
  return {{"mode", "auto"},
          {"even", partition_json(balance.even)},
          {"balanced", partition_json(balance.balanced)},
          {"same_partition", balance.even.stage_layers == balance.balanced.stage_layers &&
                                 balance.even.dp_micro_batches == balance.balanced.dp_micro_batches},
          {"speedup", balance.speedup()},
          {"time_saved_fraction", even > 0 ? 1 - balanced / even : 0.0},
          {"searched_dp_shares", balance.searched_dp_shares},
          {"memory_capped_stages", balance.memory_capped_stages},
          {"even_run_dir", balance.even_run_dir}};
}

BalanceOutcome balance_outcome_from_json(const nlohmann::json& j) {
  return {.even = partition_from_json(j.at("even")),
          .balanced = partition_from_json(j.at("balanced")),
          .searched_dp_shares = j.at("searched_dp_shares").get<bool>(),
          .memory_capped_stages = j.at("memory_capped_stages").get<std::vector<int>>(),
          .even_run_dir = j.at("even_run_dir").get<std::string>()};
}

}  // namespace trainsim::analysis
