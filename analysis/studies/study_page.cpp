#include "analysis/studies/study_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ostream>

#include "analysis/studies/figure_names.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// A value for people (analysis/studies/figure_names: "815ms", "40.2%",
// "14.7GiB"); the exact value is in the cell's title and in results.csv.
std::string display(const std::string& column, const nlohmann::ordered_json& value) {
  if (value.is_null())
    return "";
  // A rate's unit is in its column's header: the cell keeps the number.
  if (value.is_number() && figure_meaning(column).kind == FigureKind::rate)
    return units::format_si(value.get<double>(), "");
  if (value.is_number())
    return format_figure(column, value.get<double>());
  if (value.is_string())
    return value.get<std::string>();
  return value.dump();
}

// Drops the XML prolog: inside HTML the <svg> element stands alone.
std::string inline_svg(const std::string& svg) {
  if (svg.rfind("<?xml", 0) == 0) {
    const auto end = svg.find("?>");
    if (end != std::string::npos)
      return svg.substr(svg.find('<', end));
  }
  return svg;
}

constexpr const char* kStyle = R"(body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
.figures{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;border:1px solid #ddd;padding:8px}figcaption{font-size:12px;color:#555}
.table-wrap{overflow-x:auto}table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;position:sticky;top:0;text-align:left;white-space:normal;max-width:7em;
vertical-align:bottom}td.text{text-align:left}
td.reason{white-space:normal;min-width:18em;max-width:36em}
.figures svg{max-width:660px;height:auto}
tr.failed td{background:#fde2e2}tr.dropped td{color:#888}
details{margin-top:16px}summary{cursor:pointer}
)";

// The figures a reader of a study wants first, when they vary.
constexpr std::array<const char*, 8> kFiguresOfInterest{
    "iteration_time_s", "tokens_per_s_per_gpu",  "tokens_per_s",      "mfu",
    "bubble_fraction",  "exposed_comm_fraction", "peak_memory_bytes", "energy_per_token_J"};

void write_table(std::ostream& out, const ResultsDocument& doc, const std::vector<std::string>& columns,
                 const char* css_class) {
  out << "<div class=\"table-wrap\">\n<table class=\"" << css_class << "\">\n<thead><tr>";
  for (const auto& c : columns) {
    const bool plain = c == "point" || c == "status" || c == "reason" || c == "exit_status";
    out << "<th title=\"" << escape(c) << "\">" << escape(plain ? c : figure_meaning(c).label) << "</th>";
  }
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& row : doc.rows) {
    out << "<tr class=\"" << escape(row.status) << "\">";
    for (const auto& c : columns) {
      const auto v = cell(row, c);
      const bool text = !v.is_number() || c == "point";
      out << "<td" << (c == "reason" ? " class=\"text reason\"" : text ? " class=\"text\"" : "");
      if (v.is_number())
        out << " title=\"" << escape(v.is_number_float() ? units::format_machine(v.get<double>()) : v.dump())
            << "\"";
      out << ">"
          << escape(c == "point" || c == "exit_status" ? (v.is_string() ? v.get<std::string>() : v.dump())
                                                       : display(c, v))
          << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody>\n</table>\n</div>\n";
}

}  // namespace

void write_study_page_html(std::ostream& out, const ResultsDocument& doc,
                           const std::vector<StudyFigure>& figures) {
  const std::string name = doc.study.value("name", "study");
  int ok = 0, failed = 0, dropped = 0;
  for (const auto& row : doc.rows) {
    ok += row.status == kStatusOk;
    failed += row.status == kStatusFailed;
    dropped += row.status == kStatusDropped;
  }
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out << "<title>" << escape(name) << " - trainsim study</title>\n<style>\n"
      << kStyle << "</style>\n</head>\n<body>\n";
  out << "<h1>" << escape(name) << "</h1>\n";
  if (doc.study.contains("description") && doc.study["description"].is_string())
    out << "<p class=\"description\">" << escape(doc.study["description"].get<std::string>()) << "</p>\n";
  out << fmt::format(
      "<p class=\"counts\">{} points: {} ok, {} failed, {} dropped. Study file <code>{}</code>.</p>\n",
      doc.rows.size(), ok, failed, dropped, escape(doc.study.value("file", "")));
  // Figures equal in every point that has them say nothing about the study:
  // listed once above the table instead of repeated in each row.
  std::vector<std::string> varying;
  std::vector<std::pair<std::string, nlohmann::ordered_json>> constant;
  std::vector<std::string> parameters;
  if (doc.study.contains("parameters"))
    for (const auto& p : doc.study["parameters"])
      parameters.push_back(p.get<std::string>());
  bool any_reason = false;
  for (const auto& row : doc.rows)
    any_reason = any_reason || !cell(row, "reason").is_null();
  for (const auto& c : result_columns(doc)) {
    const bool fixed_column = c == "point" || c == "status" || c == "exit_status" || c == "reason" ||
                              std::find(parameters.begin(), parameters.end(), c) != parameters.end();
    if (fixed_column)
      continue;
    nlohmann::ordered_json value;
    bool same = true;
    for (const auto& row : doc.rows) {
      if (!same || row.status != kStatusOk)
        continue;
      const auto v = cell(row, c);
      if (value.is_null())
        value = v;
      same = !v.is_null() && v == value;
    }
    if (same && !value.is_null())
      constant.emplace_back(c, value);
    else
      varying.push_back(c);
  }
  // First the point, its parameters and the figures of interest (with why a
  // point failed or was dropped); every other figure that varies below.
  std::vector<std::string> first{"point", "status"};
  first.insert(first.end(), parameters.begin(), parameters.end());
  for (const char* f : kFiguresOfInterest)
    if (std::find(varying.begin(), varying.end(), f) != varying.end())
      first.emplace_back(f);
  if (any_reason)
    first.emplace_back("reason");
  std::vector<std::string> rest{"point"};
  for (const auto& c : varying)
    if (std::find(first.begin(), first.end(), c) == first.end())
      rest.push_back(c);
  out << "<h2>Results</h2>\n";
  write_table(out, doc, first, "results");
  if (rest.size() > 1) {
    out << fmt::format(
        "<details class=\"more\"><summary>{} more figures that vary between points</summary>\n",
        rest.size() - 1);
    write_table(out, doc, rest, "results-more");
    out << "</details>\n";
  }
  // The plots after the table of what varies, two to a row.
  if (!figures.empty()) {
    out << "<h2>Plots</h2>\n<div class=\"figures\">\n";
    for (const auto& f : figures)
      out << "<figure>\n"
          << inline_svg(f.svg) << "<figcaption>" << escape(f.title) << " (<code>" << escape(f.file)
          << "</code>)</figcaption>\n</figure>\n";
    out << "</div>\n";
  }

  if (!constant.empty()) {
    out << "<p class=\"constant\"><small>The same in every point: ";
    for (std::size_t i = 0; i < constant.size(); ++i)
      out << (i ? ", " : "") << "<code>" << escape(constant[i].first)
          << "</code> = " << escape(display(constant[i].first, constant[i].second));
    out << ".</small></p>\n";
  }
  out << "<p><small>Written by trainsim; the same rows, every column at full precision, are in results.csv "
         "and "
         "results.json.</small></p>\n</body>\n</html>\n";
}

}  // namespace trainsim::analysis
