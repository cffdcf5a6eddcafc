#include "analysis/kineto/diff_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <sstream>

#include "analysis/reporters/svg_style.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::json;

bool is_time(const std::string& metric) {
  return metric.size() > 2 && metric.compare(metric.size() - 2, 2, "_s") == 0;
}

// "class.gemm_s" -> "class gemm", "critical_path.idle_s" -> "critical path: idle".
std::string label_of(const std::string& metric) {
  std::string m = is_time(metric) ? metric.substr(0, metric.size() - 2) : metric;
  if (m.rfind("class.", 0) == 0)
    return "class " + m.substr(6);
  if (m.rfind("critical_path.", 0) == 0)
    return "critical path: " + m.substr(14);
  if (m.rfind("streams.", 0) == 0)
    return m.substr(8) + " streams busy";
  if (m.rfind("flops.", 0) == 0)
    return m.substr(6) + " TFLOP";
  std::replace(m.begin(), m.end(), '_', ' ');
  return m;
}

std::string value(const std::string& metric, double v) {
  if (is_time(metric))
    return fmt::format("{:.3f}", v * 1e3);  // ms
  return fmt::format("{:.3f}", v / 1e12);   // TFLOP
}

std::string relative(const DiffRow& r) {
  const double x = r.relative();
  if (std::isinf(x))
    return "new";
  // Ten times or more: a factor reads better than +41283%.
  if (x >= 9)
    return fmt::format("x{:.3g}", x + 1);
  return fmt::format("{:+.1f}%", 100 * x);
}

}  // namespace

std::string diff_terminal(const TraceDiff& d, const DiffHeader& h) {
  std::ostringstream out;
  out << fmt::format("trainsim diff: {} (measured: {})\n\n", h.title, h.measured);
  out << fmt::format("{:<34} {:>12} {:>12} {:>9}\n", "all ranks (mean), ms / TFLOP", "measured", "simulated",
                     "diff");
  for (const auto& r : d.rows)
    if (r.rank < 0)
      out << fmt::format("{:<34} {:>12} {:>12} {:>9}\n", label_of(r.metric), value(r.metric, r.measured),
                         value(r.metric, r.simulated), relative(r));
  if (d.ranks.size() > 1) {
    out << fmt::format("\n{:<8} {:>12} {:>12} {:>9} {:>12} {:>12} {:>9}\n", "rank", "step ms", "simulated",
                       "diff", "busy ms", "simulated", "diff");
    for (int rank : d.ranks) {
      const DiffRow* s = d.find("step_time_s", rank);
      const DiffRow* b = d.find("busy_s", rank);
      out << fmt::format("{:<8} {:>12} {:>12} {:>9} {:>12} {:>12} {:>9}\n", rank,
                         value(s->metric, s->measured), value(s->metric, s->simulated), relative(*s),
                         value(b->metric, b->measured), value(b->metric, b->simulated), relative(*b));
    }
  }
  for (const auto& n : d.notes)
    out << "note: " << n << "\n";
  return out.str();
}

std::string diff_csv(const TraceDiff& d) {
  std::ostringstream out;
  out << "metric,rank,measured,simulated,difference,relative\n";
  for (const auto& r : d.rows) {
    const double rel = r.relative();
    out << fmt::format("{},{},{:.9g},{:.9g},{:.9g},{}\n", r.metric,
                       r.rank < 0 ? "all" : std::to_string(r.rank), r.measured, r.simulated,
                       r.simulated - r.measured,
                       std::isinf(rel) ? std::string("") : fmt::format("{:.6g}", rel));
  }
  return out.str();
}

json diff_json(const TraceDiff& d, const DiffHeader& h) {
  json rows = json::array();
  for (const auto& r : d.rows) {
    const double rel = r.relative();
    rows.push_back({{"metric", r.metric},
                    {"rank", r.rank < 0 ? json("all") : json(r.rank)},
                    {"measured", r.measured},
                    {"simulated", r.simulated},
                    {"relative", std::isinf(rel) ? json(nullptr) : json(rel)}});
  }
  return {
      {"title", h.title}, {"measured", h.measured}, {"ranks", d.ranks}, {"rows", rows}, {"notes", d.notes}};
}

namespace {

// Horizontal bars, measured above simulated, one pair per row.
std::string bars(const std::vector<const DiffRow*>& rows, const std::string& title) {
  const double label_w = 230, plot_w = 520, bar_h = 11, gap = 10, top = 34;
  const double height = top + rows.size() * (2 * bar_h + gap) + 30;
  double max = 0;
  for (const auto* r : rows)
    max = std::max({max, r->measured, r->simulated});
  const auto ticks = svg::ticks(max > 0 ? max : 1e-3, 5);
  const double axis = ticks.empty() ? 1 : ticks.back();
  std::ostringstream s;
  s << svg::open_document(label_w + plot_w + 90, height, title);
  s << fmt::format("<text x=\"10\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
                   svg::escape(title));
  s << fmt::format(
      "<rect x=\"{}\" y=\"8\" width=\"10\" height=\"10\" fill=\"#4c78a8\"/><text x=\"{}\" y=\"17\" "
      "font-size=\"11\">measured</text><rect x=\"{}\" y=\"8\" width=\"10\" height=\"10\" "
      "fill=\"#f58518\"/><text "
      "x=\"{}\" y=\"17\" font-size=\"11\">simulated</text>\n",
      label_w + plot_w - 170, label_w + plot_w - 156, label_w + plot_w - 80, label_w + plot_w - 66);
  double y = top;
  for (const auto* r : rows) {
    s << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", label_w - 8,
                     y + bar_h + 4, svg::escape(label_of(r->metric)));
    for (const auto& [v, colour] : {std::pair{r->measured, "#4c78a8"}, std::pair{r->simulated, "#f58518"}}) {
      s << fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>\n", label_w, y,
                       plot_w * v / axis, bar_h, colour);
      y += bar_h;
    }
    s << fmt::format("<text x=\"{:.2f}\" y=\"{}\" font-size=\"10\">{}</text>\n",
                     label_w + plot_w * std::max(r->measured, r->simulated) / axis + 4, y - bar_h + 3,
                     svg::escape(relative(*r)));
    y += gap;
  }
  for (double t : ticks) {
    const double x = label_w + plot_w * t / axis;
    s << fmt::format("<line x1=\"{:.2f}\" y1=\"{}\" x2=\"{:.2f}\" y2=\"{}\" stroke=\"#ccc\"/>\n", x, top - 4,
                     x, y);
    s << fmt::format("<text x=\"{:.2f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n", x,
                     y + 14, svg::escape(svg::time_label(t, axis)));
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

std::string diff_html(const TraceDiff& d, const DiffHeader& h) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
      << svg::escape("trainsim diff: " + h.title)
      << "</"
         "title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{padding:"
         "2px "
         "8px;text-align:right;border-bottom:1px solid "
         "#ddd}td:first-child,th:first-child{text-align:left}</style>"
         "</head><body>\n";
  out << "<h1>" << svg::escape("trainsim diff: " + h.title)
      << "</h1>\n<p>Measured: " << svg::escape(h.measured) << ". Both timelines in one trace: <a href=\""
      << svg::escape(h.trace_file) << "\">" << svg::escape(h.trace_file)
      << "</a> (open it in <a href=\"https://ui.perfetto.dev\">Perfetto</a>).</p>\n";
  for (const auto& n : d.notes)
    out << "<p><b>Note:</b> " << svg::escape(n) << "</p>\n";
  std::vector<const DiffRow*> time_rows, class_rows, step_rows;
  for (const auto& r : d.rows) {
    if (r.rank < 0 && is_time(r.metric))
      (r.metric.rfind("class.", 0) == 0 ? class_rows : time_rows).push_back(&r);
    if (r.rank >= 0 && r.metric == "step_time_s")
      step_rows.push_back(&r);
  }
  out << bars(time_rows, "Step, busy, idle, communication, critical path (all ranks, mean)");
  out << bars(class_rows, "Kernel time by class (all ranks, mean)");
  if (step_rows.size() > 1) {
    std::vector<DiffRow> labelled;
    for (const auto* r : step_rows)
      labelled.push_back({fmt::format("rank {}", r->rank), r->rank, r->measured, r->simulated});
    std::vector<const DiffRow*> ptrs;
    for (const auto& r : labelled)
      ptrs.push_back(&r);
    out << bars(ptrs, "Step time by rank");
  }
  out << "<h2>Every metric</h2>\n<table><tr><th>metric</th><th>rank</th><th>measured</th><th>simulated</th>"
         "<th>difference</th></tr>\n";
  for (const auto& r : d.rows)
    out << fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       svg::escape(label_of(r.metric) + (is_time(r.metric) ? " (ms)" : "")),
                       r.rank < 0 ? std::string("all") : std::to_string(r.rank), value(r.metric, r.measured),
                       value(r.metric, r.simulated), svg::escape(relative(r)));
  out << "</table>\n</body></html>\n";
  return out.str();
}

void write_comparison_trace(std::ostream& out, const std::vector<kineto::RankTrace>& measured,
                            const std::vector<kineto::RankTrace>& simulated,
                            const kineto::KernelClassTable& classes) {
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  const auto event = [&](const json& e) {
    out << (first ? "\n" : ",\n") << e.dump();
    first = false;
  };
  const auto side = [&](const std::vector<kineto::RankTrace>& traces, const char* what, int pid_base) {
    for (const auto& t : traces) {
      const int pid = pid_base + t.rank;
      event({{"ph", "M"},
             {"name", "process_name"},
             {"pid", pid},
             {"args", {{"name", fmt::format("{} rank {}", what, t.rank)}}}});
      event({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
      const double zero = t.steps.empty() ? 0 : t.steps.front().start_us;
      std::map<std::int64_t, bool> named;
      for (const auto& s : t.steps)
        event({{"ph", "X"},
               {"name", fmt::format("ProfilerStep#{}", s.number)},
               {"cat", "step"},
               {"pid", pid},
               {"tid", 0},
               {"ts", s.start_us - zero},
               {"dur", s.duration_us()}});
      for (const auto& k : t.kernels) {
        if (k.step < 0)
          continue;
        if (!named[k.stream]) {
          named[k.stream] = true;
          event({{"ph", "M"},
                 {"name", "thread_name"},
                 {"pid", pid},
                 {"tid", k.stream},
                 {"args", {{"name", fmt::format("stream {}", k.stream)}}}});
        }
        const std::string& cls = classes.at(k.kernel_class).name;
        event({{"ph", "X"},
               {"name", t.name_of(k)},
               {"cat", cls},
               {"pid", pid},
               {"tid", k.stream},
               {"ts", k.start_us - zero},
               {"dur", k.duration_us},
               {"args", {{"class", cls}}}});
      }
    }
  };
  side(measured, "measured", 1);
  side(simulated, "simulated", 1000000);
  out << "\n]}\n";
}

}  // namespace trainsim::analysis
