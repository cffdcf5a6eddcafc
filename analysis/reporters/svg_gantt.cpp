// The pipeline Gantt chart of one iteration: GPUs down, time across. Each row
// is one GPU: its compute ops as boxes coloured by kind (critical-path ops
// outlined), its communication as a thin strip under them, and the light
// grey background left showing wherever the GPU did nothing (the bubbles).
#include <fmt/ostream.h>

#include <algorithm>
#include <ostream>
#include <set>

#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/svg_style.hpp"

namespace trainsim::analysis {
namespace {

// Which GPUs get a row: all of them when they fit, else the first data
// parallel replica, else its first tensor-parallel rank of each stage.
std::vector<int> gantt_rows(const RunContext& run) {
  std::vector<int> rows;
  for (int g = 0; g < run.graph.gpu_count; ++g)
    rows.push_back(g);
  auto keep = [&](auto pred) {
    if (static_cast<int>(rows.size()) <= kGanttMaxRows)
      return;
    std::vector<int> kept;
    for (int g : rows)
      if (pred(g))
        kept.push_back(g);
    rows = kept;
  };
  keep([&](int g) { return run.plan.dp_rank_of(g) == 0; });
  keep([&](int g) { return run.plan.tp_rank_of(g) == 0; });
  if (static_cast<int>(rows.size()) > kGanttMaxRows)
    rows.resize(kGanttMaxRows);
  return rows;
}

}  // namespace

void write_gantt_svg(std::ostream& out, const RunContext& run, const Timeline& timeline,
                     const Report& report) {
  const std::vector<int> rows = gantt_rows(run);
  const double t = std::max(timeline.end_s, 1e-12);
  constexpr double left = 170, right = 30, top = 78, row_h = 26, box_h = 17, strip_h = 5, bottom = 46;
  constexpr double plot_w = 1100;
  const double height = top + row_h * static_cast<double>(rows.size()) + bottom;
  const double width = left + plot_w + right;
  auto x = [&](double s) { return left + plot_w * s / t; };

  std::vector<int> row_of(static_cast<std::size_t>(std::max(run.graph.gpu_count, 0)), -1);
  for (std::size_t i = 0; i < rows.size(); ++i)
    row_of[static_cast<std::size_t>(rows[i])] = static_cast<int>(i);
  std::set<workloads::TaskId> critical;
  for (const auto& seg : report.critical_path.segments)
    if (seg.is_task)
      critical.insert(seg.task);

  out << svg::open_document(width, height,
                            fmt::format("{}: one training iteration per GPU", run.scenario_name));
  fmt::print(
      out,
      "<text x=\"12\" y=\"40\" fill=\"#444\">iteration {}, MFU {:.1f}%, bubble (idle) {:.1f}%, lost time "
      "{:.1f}%{}. Outlined: critical path.</text>\n",
      svg::escape(svg::time_label(timeline.end_s, timeline.end_s)), 100 * report.summary.mfu,
      100 * report.summary.bubble_fraction,
      report.bubbles.total_lost_s / (t * std::max<std::size_t>(1, report.bubbles.gpus.size())) * 100,
      static_cast<int>(rows.size()) < run.graph.gpu_count
          ? fmt::format(" ({} of {} GPUs shown)", rows.size(), run.graph.gpu_count)
          : "");
  // Legend.
  double lx = 12;
  for (const auto& [label, colour] : svg::gantt_legend()) {
    fmt::print(out,
               "<rect x=\"{:.1f}\" y=\"50\" width=\"12\" height=\"12\" fill=\"{}\" stroke=\"#999\" "
               "stroke-width=\"0.5\"/><text x=\"{:.1f}\" y=\"60\">{}</text>\n",
               lx, colour, lx + 16, svg::escape(label));
    lx += 28 + 7.0 * static_cast<double>(label.size());
  }

  // Rows: background bar (idle), label.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int g = rows[i];
    const double y = top + row_h * static_cast<double>(i);
    fmt::print(out, "<g class=\"gpu-row\" data-gpu=\"{}\">\n", g);
    fmt::print(out,
               "<rect class=\"bar\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
               "fill=\"#f4f4f4\"/>\n",
               left, y, plot_w, box_h + strip_h);
    fmt::print(out, "<text x=\"{:.1f}\" y=\"{:.2f}\" text-anchor=\"end\">GPU {} \u00b7 stage {}</text>\n",
               left - 8, y + box_h - 4, g, run.plan.pp_rank_of(g));
    fmt::print(out, "</g>\n");
  }
  // Boxes, drawn in record order per row group for a compact file.
  auto box = [&](int g, double s, double e, bool compute, workloads::TaskId id, bool on_path) {
    const auto& task = run.graph[id];
    const int r = row_of[static_cast<std::size_t>(g)];
    if (r < 0)
      return;
    const double y = top + row_h * r + (compute ? 0 : box_h);
    const double w = std::max(x(e) - x(s), 0.3);
    fmt::print(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"{}>", x(s),
               y, w, compute ? box_h : strip_h, svg::colour_of(task),
               on_path && compute ? " stroke=\"#111\" stroke-width=\"1\"" : "");
    fmt::print(out, "<title>GPU {}: {} ({} to {})</title></rect>\n", g,
               svg::escape(workloads::task_label(run.graph, id)), svg::escape(svg::time_label(s, t)),
               svg::escape(svg::time_label(e, t)));
  };
  for (const auto& r : timeline.records) {
    const auto& task = run.graph[r.task];
    const bool compute = r.stream == Stream::compute;
    box(r.gpu, r.start_s, r.end_s, compute, r.task, critical.count(r.task) > 0);
    if (task.kind == workloads::TaskKind::send && task.peer >= 0)
      box(task.peer, r.start_s, r.end_s, false, r.task, false);
  }
  // Time axis.
  const double axis_y = top + row_h * static_cast<double>(rows.size()) + 4;
  fmt::print(out, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", left,
             axis_y, left + plot_w, axis_y);
  for (double tick : svg::ticks(timeline.end_s, 10)) {
    if (tick > timeline.end_s * (1 + 1e-9))
      break;
    fmt::print(out,
               "<line x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" stroke=\"#333\"/><text "
               "x=\"{0:.2f}\" "
               "y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
               x(tick), axis_y, axis_y + 5, axis_y + 18, svg::escape(svg::time_label(tick, timeline.end_s)));
  }
  out << "</svg>\n";
}

}  // namespace trainsim::analysis
