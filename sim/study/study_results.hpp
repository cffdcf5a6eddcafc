#pragma once
// From points and their outcomes to the files a study leaves behind:
// results.csv, results.json, plots/<file>.svg and, on request, report.html.
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/studies/results_plot.hpp"
#include "analysis/studies/results_table.hpp"
#include "sim/study/point_runner.hpp"
#include "sim/study/study_points.hpp"

namespace trainsim::sim {

// The row of a point: `outcome` is null for a dropped point.
analysis::ResultRow point_row(const StudyPoint& point, const PointOutcome* outcome);

// The study header of results.json.
nlohmann::ordered_json study_header(const StudyFile& study, const std::vector<StudyPoint>& points);

struct StudyOutputs {
  std::vector<std::filesystem::path> written;
  std::vector<std::string> plot_errors;  // plots that could not be drawn, and why
  // Plots skipped because no point has one of their columns (a figure only
  // some runs write), and why: notes, not errors.
  std::vector<std::string> plot_notes;
};

// Writes results.csv and results.json (each atomically: written aside, then
// renamed), then the plots of `plots` into dir/plots/ and, when `html`,
// dir/report.html. A plot that cannot be drawn is reported, not thrown, so
// the results are never lost to a typo in a plot. A plot whose column no
// row has is skipped (plot_notes): a study, or a subset of one, whose points
// do not write a figure (docs/studies.md, "Plots whose column no point has").
StudyOutputs write_study_outputs(const std::filesystem::path& dir, const analysis::ResultsDocument& doc,
                                 const std::vector<analysis::PlotSpec>& plots, bool html);

// Plot specs stored in a results.json header (merge draws them).
std::vector<analysis::PlotSpec> plots_of(const analysis::ResultsDocument& doc);

}  // namespace trainsim::sim
