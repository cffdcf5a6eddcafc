#include "sim/study/study_results.hpp"

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "analysis/reporters/atomic_file.hpp"
#include "analysis/studies/line_plot.hpp"
#include "analysis/studies/study_page.hpp"
#include "sim/study/study_points.hpp"

namespace trainsim::sim {
namespace fs = std::filesystem;

// merge reads results.json with the same bound on points as a study has.
static_assert(kMaxStudyPoints == analysis::kMaxResultPoints);

analysis::ResultRow point_row(const StudyPoint& point, const PointOutcome* outcome) {
  analysis::ResultRow row;
  row.point = point.id;
  row.parameters = point.parameters;
  if (point.dropped) {
    row.status = analysis::kStatusDropped;
    row.reason = *point.dropped;
  } else if (outcome == nullptr || outcome->state == PointState::failed) {
    row.status = analysis::kStatusFailed;
    row.exit_status = outcome ? outcome->exit_status : 2;
    row.reason = outcome ? outcome->error : "not run";
  } else {
    row.status = analysis::kStatusOk;
    row.figures = analysis::flatten_summary(outcome->summary);
  }
  return row;
}

nlohmann::ordered_json study_header(const StudyFile& study, const std::vector<StudyPoint>& points) {
  nlohmann::ordered_json header;
  header["name"] = study.name;
  if (!study.description.empty())
    header["description"] = study.description;
  header["file"] = study.path;
  header["id"] = study_fingerprint(points);
  header["points"] = points.size();
  header["parameters"] = parameter_names(study);
  auto plots = nlohmann::ordered_json::array();
  for (const auto& p : study.plots)
    plots.push_back(p.to_json());
  header["plots"] = std::move(plots);
  return header;
}

std::vector<analysis::PlotSpec> plots_of(const analysis::ResultsDocument& doc) {
  std::vector<analysis::PlotSpec> plots;
  if (doc.study.contains("plots") && doc.study["plots"].is_array())
    for (const auto& p : doc.study["plots"])
      plots.push_back(analysis::PlotSpec::from_json(p));
  return plots;
}

StudyOutputs write_study_outputs(const fs::path& dir, const analysis::ResultsDocument& doc,
                                 const std::vector<analysis::PlotSpec>& plots, bool html) {
  StudyOutputs outputs;
  fs::create_directories(dir);
  analysis::write_file_atomically(dir / "results.csv",
                                  [&](std::ostream& o) { analysis::write_results_csv(o, doc); });
  outputs.written.push_back(dir / "results.csv");
  analysis::write_file_atomically(dir / "results.json",
                                  [&](std::ostream& o) { analysis::write_results_json(o, doc); });
  outputs.written.push_back(dir / "results.json");

  std::vector<analysis::StudyFigure> figures;
  for (std::size_t i = 0; i < plots.size(); ++i) {
    const auto& spec = plots[i];
    try {
      const std::string svg = analysis::render_line_plot_svg(analysis::build_results_plot(spec, doc));
      fs::create_directories(dir / "plots");
      const fs::path file = dir / "plots" / spec.file_or_default();
      analysis::write_file_atomically(file, [&](std::ostream& o) { o << svg; });
      outputs.written.push_back(file);
      figures.push_back({spec.title_or_default(), fmt::format("plots/{}", spec.file_or_default()), svg});
    } catch (const analysis::PlotColumnAbsent& e) {
      outputs.plot_notes.push_back(
          fmt::format("sweep.plots[{}] ({}) skipped: no point of these results has its {} '{}' (a figure "
                      "that only some runs write)",
                      i, spec.file_or_default(), e.role(), e.column()));
    } catch (const analysis::PlotError& e) {
      outputs.plot_errors.push_back(
          fmt::format("sweep.plots[{}] ({}): {}", i, spec.file_or_default(), e.what()));
    }
  }
  if (html) {
    analysis::write_file_atomically(
        dir / "report.html", [&](std::ostream& o) { analysis::write_study_page_html(o, doc, figures); });
    outputs.written.push_back(dir / "report.html");
  }
  return outputs;
}

}  // namespace trainsim::sim
