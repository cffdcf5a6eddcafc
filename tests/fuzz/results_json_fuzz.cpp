// Fuzz target: what `trainsim merge` does with one shard's results.json. The
// input is the file's text, read by analysis::parse_results_json; a document
// it accepts is then written back (results.csv, results.json, which must read
// again), its plots built and drawn and its study page written, as merge
// writes its outputs. Bad input must end in ResultsFormatError (merge's
// exit 1), a plot that cannot be drawn in PlotError (merge says so and
// exits 1); anything else escaping, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/studies/line_plot.hpp"
#include "analysis/studies/results_plot.hpp"
#include "analysis/studies/results_table.hpp"
#include "analysis/studies/study_page.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace analysis = trainsim::analysis;
  const std::string input(reinterpret_cast<const char*>(data), size);
  analysis::ResultsDocument doc;
  try {
    doc = analysis::parse_results_json(input);
  } catch (const analysis::ResultsFormatError&) {
    return 0;
  }
  analysis::sort_rows(doc.rows);
  std::ostringstream csv, json;
  analysis::write_results_csv(csv, doc);
  analysis::write_results_json(json, doc);
  // What merge writes, merge (or a later merge of merges) must read.
  (void)analysis::parse_results_json(json.str());
  std::vector<analysis::StudyFigure> figures;
  if (doc.study.contains("plots"))
    for (const auto& p : doc.study["plots"]) {
      const auto spec = analysis::PlotSpec::from_json(p);
      try {
        const std::string svg = analysis::render_line_plot_svg(analysis::build_results_plot(spec, doc));
        figures.push_back({spec.title_or_default(), spec.file_or_default(), svg});
      } catch (const analysis::PlotError&) {
      }
    }
  std::ostringstream page;
  analysis::write_study_page_html(page, doc, figures);
  return 0;
}
