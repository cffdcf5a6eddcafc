#include "analysis/reporters/output_files.hpp"

#include <fstream>
#include <functional>
#include <stdexcept>

#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {
namespace {

void write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw std::runtime_error("cannot write " + path.string());
  write(out);
  out.flush();
  if (!out)
    throw std::runtime_error("error while writing " + path.string());
}

}  // namespace

std::vector<std::string> write_output_files(const std::filesystem::path& dir, const RunContext& run,
                                            const Timeline& timeline, const Report& report, bool html) {
  std::vector<std::string> written;
  auto file = [&](const std::string& name, const std::function<void(std::ostream&)>& write) {
    write_file(dir / name, write);
    written.push_back(name);
  };
  file("summary.json", [&](std::ostream& o) { write_summary_json(o, run, report); });
  file("per_gpu.csv", [&](std::ostream& o) { write_per_gpu_csv(o, run, report); });
  file("per_stage.csv", [&](std::ostream& o) { write_per_stage_csv(o, run, report); });
  file("links.csv", [&](std::ostream& o) { write_links_csv(o, report); });
  file("critical_path.csv", [&](std::ostream& o) { write_critical_path_csv(o, run, timeline, report); });
  file("timeline.csv", [&](std::ostream& o) { write_timeline_csv(o, run, timeline); });
  file("trace.json", [&](std::ostream& o) { write_chrome_trace(o, run, timeline, report); });
  file("gantt.svg", [&](std::ostream& o) { write_gantt_svg(o, run, timeline, report); });
  file("bubbles.svg", [&](std::ostream& o) { write_bubbles_svg(o, run, report); });
  file("memory.svg", [&](std::ostream& o) { write_memory_svg(o, run, report); });
  if (html)
    file("report.html", [&](std::ostream& o) { write_html_report(o, run, timeline, report, "trace.json"); });
  return written;
}

std::string file_safe_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

}  // namespace trainsim::analysis
