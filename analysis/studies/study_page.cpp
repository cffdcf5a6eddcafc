#include "analysis/studies/study_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

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

// Numbers at four significant digits for reading; the exact value is in the
// cell's title and in results.csv.
std::string display(const nlohmann::ordered_json& value) {
  if (value.is_null())
    return "";
  if (value.is_number_float())
    return fmt::format("{:.4g}", value.get<double>());
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
th{background:#f3f3f3;position:sticky;top:0}td.text{text-align:left}
tr.failed td{background:#fde2e2}tr.dropped td{color:#888}
)";

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
  if (!figures.empty()) {
    out << "<h2>Plots</h2>\n<div class=\"figures\">\n";
    for (const auto& f : figures)
      out << "<figure>\n"
          << inline_svg(f.svg) << "<figcaption>" << escape(f.title) << " (<code>" << escape(f.file)
          << "</code>)</figcaption>\n</figure>\n";
    out << "</div>\n";
  }
  // Figures equal in every point that has them say nothing about the study:
  // listed once above the table instead of repeated in each row.
  std::vector<std::string> columns;
  std::vector<std::pair<std::string, nlohmann::ordered_json>> constant;
  for (const auto& c : result_columns(doc)) {
    const bool fixed_column = c == "point" || c == "status" || c == "exit_status" || c == "reason" ||
                              (doc.study.contains("parameters") &&
                               std::find(doc.study["parameters"].begin(), doc.study["parameters"].end(), c) !=
                                   doc.study["parameters"].end());
    nlohmann::ordered_json value;
    bool same = !fixed_column;
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
      columns.push_back(c);
  }
  out << "<h2>Results</h2>\n";
  if (!constant.empty()) {
    out << "<p class=\"constant\"><small>The same in every point: ";
    for (std::size_t i = 0; i < constant.size(); ++i)
      out << (i ? ", " : "") << "<code>" << escape(constant[i].first)
          << "</code> = " << escape(display(constant[i].second));
    out << ".</small></p>\n";
  }
  out << "<div class=\"table-wrap\">\n<table class=\"results\">\n<thead><tr>";
  for (const auto& c : columns)
    out << "<th>" << escape(c) << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& row : doc.rows) {
    out << "<tr class=\"" << escape(row.status) << "\">";
    for (const auto& c : columns) {
      const auto v = cell(row, c);
      const bool text = !v.is_number();
      out << "<td" << (text ? " class=\"text\"" : "");
      if (v.is_number_float())
        out << " title=\"" << v.dump() << "\"";
      out << ">" << escape(display(v)) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody>\n</table>\n</div>\n<p><small>Written by trainsim; the same rows are in results.csv and "
         "results.json.</small></p>\n</body>\n</html>\n";
}

}  // namespace trainsim::analysis
