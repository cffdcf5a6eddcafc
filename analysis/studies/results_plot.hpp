#pragma once
// A study plot: a chosen figure (y) against a chosen parameter or figure (x),
// one line per value of other parameters (`lines`), from the rows of a
// results table. For example per-GPU throughput against the GPU count, one
// line per plan.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/studies/line_plot.hpp"
#include "analysis/studies/results_table.hpp"

namespace trainsim::analysis {

struct PlotSpec {
  std::string x;
  std::string y;
  std::vector<std::string> lines;  // one line per combination of their values
  // Only rows whose column has this value (fix the parameters not plotted).
  std::vector<std::pair<std::string, nlohmann::ordered_json>> where;
  bool log_x = false;
  bool log_y = false;
  std::string title;  // default "<y> vs <x>"
  std::string file;   // default "<y>-vs-<x>[-by-<lines>].svg"

  std::string title_or_default() const;
  std::string file_or_default() const;
  nlohmann::ordered_json to_json() const;
  // Throws ResultsFormatError for a malformed spec.
  static PlotSpec from_json(const nlohmann::ordered_json& j);
};

// Thrown for a plot whose column (x, y, lines or where) no row of the
// results has: a figure that only some runs write (expert imbalance, FP8's
// MFU) in a study, or a subset of one, whose points write none. The study
// file's columns are checked when it loads (result_column_names.hpp), so
// this is not a typo: the sweep skips the plot with a note.
class PlotColumnAbsent : public PlotError {
 public:
  PlotColumnAbsent(const std::string& message, std::string role, std::string column)
      : PlotError(message), role_(std::move(role)), column_(std::move(column)) {}
  const std::string& role() const { return role_; }      // "x", "y", "lines", "where"
  const std::string& column() const { return column_; }  // the column no row has

 private:
  std::string role_;
  std::string column_;
};

// The plot of `spec` over the rows of `doc` that finished ("ok") and match
// `where`. Throws PlotColumnAbsent for a column that does not exist,
// PlotError naming any other problem:
// a y value that is not a number, or two points of one line at the same x
// (it then names the columns that differ, to add to `lines` or `where`).
LinePlot build_results_plot(const PlotSpec& spec, const ResultsDocument& doc);

}  // namespace trainsim::analysis
