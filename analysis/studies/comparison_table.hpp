#pragma once
// The side-by-side table `trainsim compare` prints: the inputs that differ
// between the variants, the headline figures (iteration time, throughput,
// MFU, bubble, exposed communication, peak memory, energy per token), then
// every other figure of summary.json whose value differs by more than the
// ratio's precision, each with its ratio to the first variant (identifiers
// such as a GPU number get none; numbers read as analysis/studies/figure_names
// says). Figures are read by key from the summaries, so a
// figure another part of trainsim adds to summary.json shows up here without
// a change; a headline figure no summary has yet reads "n/a".
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim::analysis {

struct ComparedRun {
  std::string name;
  nlohmann::ordered_json figures;  // flatten_summary() of its summary.json; null when the run failed
  std::string error;               // why it failed
};

struct HeadlineFigure {
  std::string label;
  std::vector<std::string> keys;  // the first one a summary has is shown
};
// The headline rows, in order.
const std::vector<HeadlineFigure>& headline_figures();

void write_comparison_table(std::ostream& out, const std::vector<ComparedRun>& runs);

}  // namespace trainsim::analysis
