// report.html: one self-contained page (inline CSS and SVG, no external
// resource) with the summary, the three plots, the tables, and a link to the
// Chrome trace next to it.
#include <fmt/ostream.h>

#include <ostream>
#include <sstream>

#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/svg_style.hpp"
#include "platforms/units.hpp"
#include "trainsim_version.hpp"

namespace trainsim::analysis {
namespace {

std::string pct(double fraction) {
  return units::format_percent(fraction);
}

// An SVG document without its XML prologue, to inline in HTML.
std::string inline_svg(const std::string& document) {
  const auto pos = document.find("<svg");
  return pos == std::string::npos ? document : document.substr(pos);
}

void row(std::ostream& out, std::string_view name, std::string_view value) {
  fmt::print(out, "<tr><th>{}</th><td class=\"num\">{}</td></tr>\n", svg::escape(name), svg::escape(value));
}

void blame_table(std::ostream& out, std::string_view title, const std::vector<Blame>& blames,
                 std::size_t limit) {
  fmt::print(out,
             "<table class=\"blame\"><caption>{}</caption><tr><th>on</th><th>time</th><th>share</th></tr>\n",
             svg::escape(title));
  for (std::size_t i = 0; i < blames.size() && i < limit; ++i)
    fmt::print(out, "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
               svg::escape(blames[i].name), svg::escape(units::format_duration(blames[i].seconds)),
               pct(blames[i].fraction));
  out << "</table>\n";
}

}  // namespace

void write_html_report(std::ostream& out, const RunContext& run, const Timeline& timeline,
                       const Report& report, const std::string& trace_file) {
  const Summary& s = report.summary;
  const double t = s.iteration_time_s;
  std::ostringstream gantt, bubbles, memory;
  write_gantt_svg(gantt, run, timeline, report);
  write_bubbles_svg(bubbles, run, report);
  write_memory_svg(memory, run, report);

  fmt::print(
      out,
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>trainsim: {}</title>\n"
      "<style>\n"
      "body{{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1400px}}\n"
      "table{{border-collapse:collapse;margin:8px 24px 16px 0;display:inline-table;vertical-align:top}}\n"
      "th,td{{border:1px solid #ddd;padding:3px 8px;text-align:left}} th{{background:#f6f6f6}}\n"
      "td.num{{text-align:right;font-variant-numeric:tabular-nums}}\n"
      "caption{{font-weight:bold;text-align:left;padding:4px 0}} .plot{{overflow-x:auto;margin:12px 0}}\n"
      "code{{background:#f4f4f4;padding:1px 4px}}\n"
      "</style>\n</head>\n<body>\n",
      svg::escape(run.scenario_name));
  fmt::print(
      out,
      "<h1>{}</h1>\n<p>{} GPUs on {} nodes ({}), {} ({:.2f}B parameters); dp {} &times; tp {} &times; pp {}, "
      "{} micro-batches of {}, schedule {}, recompute {}. Scenario <code>{}</code>, trainsim {}.</p>\n",
      svg::escape(run.scenario_name), run.cluster.gpu_count(), run.cluster.node_count(),
      svg::escape(run.cluster.gpu_description()), svg::escape(run.model.name),
      run.model.parameter_count() / 1e9, run.plan.dp, run.plan.tp, run.plan.pp, run.plan.micro_batches(),
      run.plan.micro_batch_size, to_string(run.plan.schedule), to_string(run.plan.recompute),
      svg::escape(run.scenario_file), version_string);
  fmt::print(
      out,
      "<p>Timeline: <a id=\"trace-link\" href=\"{0}\">{0}</a> (Chrome trace: open it in "
      "<a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a> or <code>chrome://tracing</code>).</p>\n",
      svg::escape(trace_file));

  out << "<table class=\"headline\"><caption>Iteration</caption>\n";
  row(out, "iteration time", units::format_duration(t));
  if (report.bubbles.reference_iteration_time_s < t * (1 - 1e-9))
    row(out,
        run.cluster.gpu_description() != run.cluster.groups.front().gpu.name ? "at the fastest GPU's pace"
                                                                             : "without stragglers",
        units::format_duration(report.bubbles.reference_iteration_time_s));
  row(out, "tokens / s", units::format_si(s.tokens_per_s, ""));
  row(out, "TFLOP/s per GPU", fmt::format("{:.1f}", s.tflops_per_gpu));
  row(out, "MFU / HFU", fmt::format("{} / {}", pct(s.mfu), pct(s.hfu)));
  row(out, "compute / exposed comm / bubble",
      fmt::format("{} / {} / {}", pct(s.compute_fraction), pct(s.exposed_comm_fraction),
                  pct(s.bubble_fraction)));
  if (report.memory.peak_gpu >= 0)
    row(out, "peak memory",
        fmt::format("{} on GPU {}", units::format_bytes(report.memory.peak_bytes), report.memory.peak_gpu));
  if (report.energy.measured) {
    row(out, "energy / iteration", units::format_si(report.energy.energy_J, "J"));
    row(out, "energy / token", units::format_si(report.energy.energy_per_token_J, "J"));
    row(out, "average power per GPU", units::format_si(report.energy.average_power_per_gpu_W, "W"));
    row(out, "energy drawn idle", pct(report.energy.idle_energy_fraction));
  }
  out << "</table>\n";

  out << "<table class=\"causes\"><caption>Top causes of lost time</caption>"
         "<tr><th>cause</th><th>share of GPU time</th><th>worst stage</th></tr>\n";
  for (const auto& c : top_lost_time_causes(report))
    fmt::print(out, "<tr><td>{}</td><td class=\"num\">{}</td><td>stage {} ({})</td></tr>\n",
               svg::escape(describe(c.cause)), pct(c.fraction), c.worst_stage, pct(c.worst_stage_fraction));
  out << "</table>\n";

  fmt::print(out, "<h2>Pipeline</h2>\n<div class=\"plot\" id=\"gantt\">{}</div>\n", inline_svg(gantt.str()));
  fmt::print(out, "<h2>Lost time by stage</h2>\n<div class=\"plot\" id=\"bubbles\">{}</div>\n",
             inline_svg(bubbles.str()));
  out << "<table class=\"stages\"><caption>Stages (percent of the iteration)</caption><tr><th>stage</th>"
         "<th>compute</th><th>exposed comm</th><th>bubble</th><th>lost</th>";
  const std::vector<BubbleCause> causes = reported_causes(report.bubbles);
  for (BubbleCause c : causes)
    fmt::print(out, "<th>{}</th>", svg::escape(describe(c)));
  out << "</tr>\n";
  for (const auto& st : s.stages) {
    const auto& b = report.bubbles.stages.at(static_cast<std::size_t>(st.stage));
    fmt::print(out,
               "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
               "class=\"num\">{}</td><td class=\"num\">{}</td>",
               st.stage, pct(st.compute_fraction), pct(st.exposed_comm_fraction), pct(st.bubble_fraction),
               pct(t > 0 ? b.lost_s / t : 0));
    for (BubbleCause c : causes)
      fmt::print(out, "<td class=\"num\">{}</td>",
                 pct(t > 0 ? b.cause_s[static_cast<std::size_t>(c)] / t : 0));
    out << "</tr>\n";
  }
  out << "</table>\n<h2>Critical path</h2>\n";
  blame_table(out, "by task kind", report.critical_path.by_kind, 12);
  blame_table(out, "by GPU (compute)", report.critical_path.by_gpu, 10);
  blame_table(out, "by link (communication)", report.critical_path.by_link, 10);

  out << "<h2>Network</h2>\n<table class=\"links\"><caption>Hottest "
         "links</caption><tr><th>link</th><th>bandwidth</th>"
         "<th>bytes</th><th>busy</th><th>load</th><th>peak flows</th></tr>\n";
  for (int l : report.utilization.hottest) {
    const auto& link = report.utilization.links[static_cast<std::size_t>(l)];
    fmt::print(
        out,
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        svg::escape(link.name), svg::escape(units::format_bandwidth(link.bandwidth_Bps)),
        svg::escape(units::format_bytes(link.bytes)), pct(link.busy_fraction), pct(link.utilization),
        link.peak_concurrent_flows);
  }
  out << "</table>\n";
  fmt::print(out, "<h2>Memory</h2>\n<div class=\"plot\" id=\"memory\">{}</div>\n", inline_svg(memory.str()));

  out << "<script>document.documentElement.dataset.plots = String(document.querySelectorAll('svg').length);"
         "</script>\n</body>\n</html>\n";
}

}  // namespace trainsim::analysis
