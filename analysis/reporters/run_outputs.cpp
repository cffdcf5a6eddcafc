#include "analysis/reporters/run_outputs.hpp"

#include <ostream>

#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {

WrittenRun write_run_outputs(RunFolder& folder, const RunOutputs& outputs) {
  const RunContext& run = outputs.run;
  const Timeline& timeline = outputs.timeline;
  WrittenRun written{
      .report = build_report(run, timeline, outputs.summary, outputs.repeats, outputs.computed), .files = {}};
  if (outputs.summary == nullptr && outputs.fold != nullptr)
    written.report.summary.fold = *outputs.fold;
  const Report& report = written.report;
  auto file = [&](const std::string& name, const std::function<void(std::ostream&)>& write) {
    folder.write(name, write);
    written.files.push_back(name);
  };
  file("summary.json", [&](std::ostream& o) { write_summary_json(o, run, report); });
  file("per_gpu.csv", [&](std::ostream& o) { write_per_gpu_csv(o, run, report); });
  file("per_stage.csv", [&](std::ostream& o) { write_per_stage_csv(o, run, report); });
  file("links.csv", [&](std::ostream& o) { write_links_csv(o, report); });
  file("critical_path.csv", [&](std::ostream& o) { write_critical_path_csv(o, run, timeline, report); });
  file("timeline.csv", [&](std::ostream& o) { write_timeline_csv(o, run, timeline); });
  written.trace = resolved_trace_detail(outputs.trace, run, timeline, report);
  file("trace.json", [&](std::ostream& o) { write_chrome_trace(o, run, timeline, report, written.trace); });
  file("gantt.svg", [&](std::ostream& o) { write_gantt_svg(o, run, timeline, report); });
  file("bubbles.svg", [&](std::ostream& o) { write_bubbles_svg(o, run, report); });
  file("memory.svg", [&](std::ostream& o) { write_memory_svg(o, run, report); });
  if (outputs.html)
    file("report.html", [&](std::ostream& o) { write_html_report(o, run, timeline, report, "trace.json"); });
  if (outputs.archive) {
    const std::string metadata = run_metadata_json(*outputs.archive);
    file(kRunArchiveFile,
         [&](std::ostream& o) { write_run_archive(o, metadata, run.graph, timeline, report.summary.fold); });
  } else if (outputs.keep_archive) {
    folder.keep(kRunArchiveFile);
  }
  for (const auto& name : outputs.kept_folders) {
    folder.keep(name);
    written.files.push_back(name + "/");
  }
  folder.complete();
  return written;
}

}  // namespace trainsim::analysis
