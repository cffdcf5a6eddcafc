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

// The plot of `spec` over the rows of `doc` that finished ("ok") and match
// `where`. Throws PlotError naming the problem: a column that does not exist,
// a y value that is not a number, or two points of one line at the same x
// (it then names the columns that differ, to add to `lines` or `where`).
LinePlot build_results_plot(const PlotSpec& spec, const ResultsDocument& doc);

}  // namespace trainsim::analysis
