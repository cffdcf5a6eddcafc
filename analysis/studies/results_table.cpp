#include "analysis/studies/results_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <istream>
#include <ostream>
#include <set>

#include "analysis/reporters/json_numbers.hpp"
#include "platforms/number_format.hpp"
#include "trainsim_version.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

void flatten_into(const ordered_json& object, const std::string& prefix, ordered_json& out) {
  for (const auto& [key, value] : object.items()) {
    const std::string name = prefix.empty() ? key : fmt::format("{}.{}", prefix, key);
    if (value.is_object())
      flatten_into(value, name, out);
    else if (!value.is_array())
      out[name] = value;
  }
}

bool is_reserved(const std::string& key) {
  return key == "point" || key == "status" || key == "exit_status" || key == "reason";
}

bool is_parameter(const ResultsDocument& doc, const std::string& key) {
  if (!doc.study.contains("parameters"))
    return false;
  for (const auto& p : doc.study["parameters"])
    if (p.is_string() && p.get<std::string>() == key)
      return true;
  return false;
}

std::string csv_text(const ordered_json& value) {
  std::string text;
  if (value.is_null())
    return "";
  if (value.is_string())
    text = value.get<std::string>();
  else if (value.is_number_float())
    text = units::format_machine(value.get<double>());  // "4", not "4.0"
  else
    text = value.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos)
    return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

long long point_number(const std::string& point) {
  long long n = 0;
  auto [ptr, ec] = std::from_chars(point.data(), point.data() + point.size(), n);
  if (ec != std::errc() || ptr != point.data() + point.size())
    return -1;
  return n;
}

}  // namespace

ordered_json flatten_summary(const ordered_json& summary) {
  ordered_json out = ordered_json::object();
  ordered_json figures = summary;
  if (figures.is_object()) {
    figures.erase("schema");
    figures.erase("trainsim_version");
  }
  if (summary.is_object())
    flatten_into(figures, "", out);
  if (!out.contains("tokens_per_s_per_gpu") && out.contains("tokens_per_s") && out.contains("cluster.gpus") &&
      out["tokens_per_s"].is_number() && out["cluster.gpus"].is_number() &&
      out["cluster.gpus"].get<double>() > 0) {
    // Insert right after tokens_per_s so the columns read naturally.
    ordered_json ordered = ordered_json::object();
    for (const auto& [key, value] : out.items()) {
      ordered[key] = value;
      if (key == "tokens_per_s")
        ordered["tokens_per_s_per_gpu"] = value.get<double>() / out["cluster.gpus"].get<double>();
    }
    out = std::move(ordered);
  }
  return out;
}

ordered_json parameter_value(const std::string& text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  long long integer = 0;
  if (auto [ptr, ec] = std::from_chars(begin, end, integer); ec == std::errc() && ptr == end && !text.empty())
    return integer;
  double number = 0;
  if (auto [ptr, ec] = std::from_chars(begin, end, number);
      ec == std::errc() && ptr == end && !text.empty() && std::isfinite(number))
    return number;
  return text;
}

std::vector<std::string> result_columns(const ResultsDocument& doc) {
  std::vector<std::string> columns{"point", "status"};
  std::set<std::string> seen(columns.begin(), columns.end());
  seen.insert("exit_status");
  seen.insert("reason");
  if (doc.study.contains("parameters"))
    for (const auto& p : doc.study["parameters"])
      if (seen.insert(p.get<std::string>()).second)
        columns.push_back(p.get<std::string>());
  for (const auto& row : doc.rows)
    for (const auto& [key, value] : row.figures.items())
      if (seen.insert(key).second)
        columns.push_back(key);
  columns.push_back("exit_status");
  columns.push_back("reason");
  return columns;
}

ordered_json cell(const ResultRow& row, const std::string& column) {
  if (column == "point")
    return row.point;
  if (column == "status")
    return row.status;
  if (column == "exit_status")
    return row.exit_status ? ordered_json(*row.exit_status) : ordered_json();
  if (column == "reason")
    return row.reason.empty() ? ordered_json() : ordered_json(row.reason);
  if (row.parameters.contains(column))
    return row.parameters[column];
  if (row.figures.contains(column))
    return row.figures[column];
  return {};
}

void write_results_csv(std::ostream& out, const ResultsDocument& doc) {
  const auto columns = result_columns(doc);
  for (std::size_t i = 0; i < columns.size(); ++i)
    out << (i ? "," : "") << csv_text(columns[i]);
  out << '\n';
  for (const auto& row : doc.rows) {
    for (std::size_t i = 0; i < columns.size(); ++i)
      out << (i ? "," : "") << csv_text(cell(row, columns[i]));
    out << '\n';
  }
}

void write_results_json(std::ostream& out, const ResultsDocument& doc) {
  ordered_json j;
  j["schema"] = kResultsSchema;
  j["trainsim_version"] = version_string;
  j["study"] = doc.study;
  if (doc.shard)
    j["shard"] = {{"index", doc.shard->index}, {"count", doc.shard->count}};
  j["columns"] = result_columns(doc);
  ordered_json rows = ordered_json::array();
  for (const auto& row : doc.rows) {
    ordered_json r;
    r["point"] = row.point;
    r["status"] = row.status;
    for (const auto& [key, value] : row.parameters.items())
      r[key] = value;
    for (const auto& [key, value] : row.figures.items())
      if (!r.contains(key) && !is_reserved(key))
        r[key] = value;
    if (row.exit_status)
      r["exit_status"] = *row.exit_status;
    if (!row.reason.empty())
      r["reason"] = row.reason;
    rows.push_back(std::move(r));
  }
  j["rows"] = std::move(rows);
  whole_numbers_as_integers(j);
  out << j.dump(1) << '\n';
}

ResultsDocument read_results_json(std::istream& in) {
  ordered_json j;
  try {
    j = ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ResultsFormatError(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object() || j.value("schema", "") != kResultsSchema)
    throw ResultsFormatError(std::string("not a trainsim results file (expected \"schema\": \"") +
                             kResultsSchema + "\")");
  ResultsDocument doc;
  if (!j.contains("study") || !j["study"].is_object() || !j.contains("rows") || !j["rows"].is_array())
    throw ResultsFormatError("missing \"study\" or \"rows\"");
  doc.study = j["study"];
  if (j.contains("shard")) {
    const auto& s = j["shard"];
    if (!s.is_object() || !s.contains("index") || !s.contains("count") || !s["index"].is_number_integer() ||
        !s["count"].is_number_integer())
      throw ResultsFormatError("\"shard\" must hold integer \"index\" and \"count\"");
    doc.shard = ShardInfo{s["index"].get<int>(), s["count"].get<int>()};
  }
  for (const auto& r : j["rows"]) {
    if (!r.is_object() || !r.contains("point") || !r["point"].is_string() || !r.contains("status") ||
        !r["status"].is_string())
      throw ResultsFormatError("a row without a \"point\" and a \"status\"");
    ResultRow row;
    for (const auto& [key, value] : r.items()) {
      if (key == "point")
        row.point = value.get<std::string>();
      else if (key == "status")
        row.status = value.get<std::string>();
      else if (key == "exit_status" && value.is_number_integer())
        row.exit_status = value.get<int>();
      else if (key == "reason" && value.is_string())
        row.reason = value.get<std::string>();
      else if (is_parameter(doc, key))
        row.parameters[key] = value;
      else
        row.figures[key] = value;
    }
    doc.rows.push_back(std::move(row));
  }
  return doc;
}

void sort_rows(std::vector<ResultRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const ResultRow& a, const ResultRow& b) {
    return point_number(a.point) < point_number(b.point);
  });
}

}  // namespace trainsim::analysis
