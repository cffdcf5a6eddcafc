#pragma once
// One self-contained HTML page for a study: its plots (inline SVG) and its
// results table, with no external resource, so it can be mailed or archived.
#include <iosfwd>
#include <string>
#include <vector>

#include "analysis/studies/results_table.hpp"

namespace trainsim::analysis {

struct StudyFigure {
  std::string title;
  std::string file;  // the .svg next to the page
  std::string svg;   // the document render_line_plot_svg wrote
};

void write_study_page_html(std::ostream& out, const ResultsDocument& doc,
                           const std::vector<StudyFigure>& figures);

}  // namespace trainsim::analysis
