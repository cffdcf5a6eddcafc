#include "analysis/studies/result_column_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "analysis/bubbles.hpp"

namespace trainsim::analysis {
namespace {

bool contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string first_part(const std::string& column) {
  return column.substr(0, column.find('.'));
}

// The names a typo most likely meant: those that share the longest prefix.
std::string closest(const std::string& name, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_common = 0;
  for (const auto c : candidates) {
    std::size_t common = 0;
    while (common < name.size() && common < c.size() && name[common] == c[common])
      ++common;
    if (common > best_common) {
      best_common = common;
      best = std::string(c);
    }
  }
  return best_common >= 3 ? best : std::string();
}

}  // namespace

const std::vector<std::string_view>& summary_top_level_keys() {
  static const std::vector<std::string_view> keys{
      "schema",
      "trainsim_version",
      "scenario",
      "cluster",
      "model",
      "plan",
      "balance",
      "iteration_time_s",
      "tokens_per_iteration",
      "tokens_per_s",
      "tokens_per_s_per_gpu",  // derived by the results table
      "model_flops_per_iteration",
      "hardware_flops_per_iteration",
      "tflops_per_gpu",
      "mfu",
      "hfu",
      "mfu_fp8_peak",
      "mfu_6n",
      "mfu_palm",
      "mfu_nvidia",
      "compute_fraction",
      "exposed_comm_fraction",
      "bubble_fraction",
      "peak_memory_bytes",
      "peak_memory_gpu",
      "fits_in_memory",
      "task_count",
      "fold",
      "hardware_tflops_per_gpu",
      "stages",
      "gpus",
      "gpu_groups",
      "lost_time",
      "critical_path",
      "utilization",
      "memory",
      "energy",
      "collectives",
  };
  return keys;
}

const std::vector<std::string_view>& result_row_columns() {
  static const std::vector<std::string_view> columns{"point", "status", "exit_status", "reason"};
  return columns;
}

std::optional<std::string> unknown_column_problem(const std::string& column,
                                                  const std::vector<std::string>& parameters) {
  if (std::find(parameters.begin(), parameters.end(), column) != parameters.end() ||
      contains(result_row_columns(), column))
    return std::nullopt;
  const std::string top = first_part(column);
  if (!contains(summary_top_level_keys(), top)) {
    std::vector<std::string_view> candidates(summary_top_level_keys());
    for (const auto& p : parameters)
      candidates.push_back(p);
    const std::string guess = closest(column, candidates);
    return fmt::format(
        "'{}' is not a column trainsim writes (expected one of the study's parameters{}{} or a summary.json "
        "figure such as tokens_per_s_per_gpu, mfu, iteration_time_s, "
        "lost_time.by_cause.p2p_wait.fraction_of_gpu_time){}",
        column, parameters.empty() ? "" : ": ", fmt::join(parameters, ", "),
        guess.empty() ? "" : fmt::format("; did you mean '{}'?", guess));
  }
  // lost_time.by_cause.<cause>...: the cause is one of the bubble causes.
  const std::string by_cause = "lost_time.by_cause.";
  if (column.rfind(by_cause, 0) == 0) {
    const std::string rest = column.substr(by_cause.size());
    const std::string cause = first_part(rest);
    std::vector<std::string_view> causes;
    for (int c = 0; c < kBubbleCauseCount; ++c)
      causes.push_back(to_string(static_cast<BubbleCause>(c)));
    if (!contains(causes, cause))
      return fmt::format("'{}' names no cause of lost time: '{}' is not one of {}", column, cause,
                         fmt::join(causes, ", "));
  }
  return std::nullopt;
}

}  // namespace trainsim::analysis
