#pragma once
// The outputs of `trainsim diff`: the comparison as a terminal table, CSV
// and JSON (every metric per rank and for all ranks), an HTML page with the
// table and SVG bars of measured beside simulated, and one Perfetto trace
// with both timelines (each measured rank and each simulated rank a process
// of its own, a thread per stream, kernels coloured by class).
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/kineto/trace_diff.hpp"

namespace trainsim::analysis {

struct DiffHeader {
  std::string title;     // "llama-70b on 64 x H100-SXM"
  std::string measured;  // what was measured ("8 traces, ranks 0-7, NVIDIA H100 80GB HBM3")
  std::string trace_file = "trace.json";
};

std::string diff_terminal(const TraceDiff& diff, const DiffHeader& header);
std::string diff_csv(const TraceDiff& diff);
nlohmann::json diff_json(const TraceDiff& diff, const DiffHeader& header);
std::string diff_html(const TraceDiff& diff, const DiffHeader& header);

// Both timelines in one Chrome / Perfetto trace, each rank's measured steps
// and the simulated iteration starting at 0.
void write_comparison_trace(std::ostream& out, const std::vector<kineto::RankTrace>& measured,
                            const std::vector<kineto::RankTrace>& simulated,
                            const kineto::KernelClassTable& classes);

}  // namespace trainsim::analysis
