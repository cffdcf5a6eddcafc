#pragma once
// Whether a name can be a column of a study's results before any point has
// run: the study file's plots are checked against it when the study loads,
// so that a typo is an error then, while a figure that only some runs write
// (lost_time.by_cause.expert_imbalance, written when routing is uneven) is
// not (docs/studies.md, "Plots whose column no point has").
//
// The check is by the name's first dotted part (a figure or a section that
// summary.json writes), and, under lost_time.by_cause, by the cause's name;
// deeper parts of a section are not checked (they vary with the run).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::analysis {

// The top-level keys of summary.json (analysis/reporters/summary_json.cpp),
// including those written for some runs only, and the derived
// tokens_per_s_per_gpu.
const std::vector<std::string_view>& summary_top_level_keys();

// Columns of a results row that do not come from summary.json.
const std::vector<std::string_view>& result_row_columns();

// Nothing when `column` may be a figure of a point's results; else what is
// wrong with it, with what was expected ("'tokens_per_joule' is not a figure
// trainsim writes (expected a study parameter or a summary.json figure such
// as tokens_per_s_per_gpu, mfu, lost_time.by_cause.p2p_wait.fraction_of_gpu_time)").
// `parameters` are the study's own columns (swept keys, `variant`).
std::optional<std::string> unknown_column_problem(const std::string& column,
                                                  const std::vector<std::string>& parameters);

}  // namespace trainsim::analysis
