#include "analysis/studies/results_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <istream>
#include <iterator>
#include <optional>
#include <ostream>
#include <set>

#include "analysis/reporters/json_numbers.hpp"
#include "platforms/input_error.hpp"
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

ResultsFormatError::ResultsFormatError(const std::string& problem)
    : std::invalid_argument(problem), problems_{problem} {}

ResultsFormatError::ResultsFormatError(std::vector<std::string> problems)
    : std::invalid_argument(fmt::format("{}", fmt::join(problems, "; "))), problems_(std::move(problems)) {}

namespace {

// A JSON value as a message shows it: its type, and a short text of it.
std::string shown(const ordered_json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  const char* type = value.is_object()    ? "an object"
                     : value.is_array()   ? "a list"
                     : value.is_string()  ? "text"
                     : value.is_boolean() ? "a boolean"
                     : value.is_null()    ? "null"
                                          : "a number";
  return value.is_null() ? std::string(type) : fmt::format("{} {}", type, text);
}

// Collects every problem of one results.json, each with the path of the
// field ("study.points", "rows[3].status").
class ResultsChecker {
 public:
  void add(const std::string& path, const std::string& message) {
    if (problems_.size() < platforms::kMaxKeptProblems)
      problems_.push_back(fmt::format("{}: {}", path, message));
  }
  bool ok() const { return problems_.empty(); }
  [[noreturn]] void fail() { throw ResultsFormatError(std::move(problems_)); }
  void throw_if_any() {
    if (!problems_.empty())
      fail();
  }

  // Each key of `object` must be one of `known`.
  void known_keys(const ordered_json& object, const std::string& path,
                  std::initializer_list<const char*> known) {
    std::string list;
    for (const char* k : known)
      list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    for (auto it = object.begin(); it != object.end(); ++it) {
      const std::string& key = it.key();
      if (std::find(known.begin(), known.end(), std::string_view(key)) == known.end())
        add(path.empty() ? key : fmt::format("{}.{}", path, key),
            fmt::format("unknown key (expected {})", list));
    }
  }
  // The text at `key`; nullptr (with a problem) when missing or not text.
  const ordered_json* text(const ordered_json& object, const std::string& path, const char* key,
                           bool required = true) {
    return typed(object, path, key, required, "text", [](const ordered_json& v) { return v.is_string(); });
  }
  const ordered_json* boolean(const ordered_json& object, const std::string& path, const char* key) {
    return typed(object, path, key, false, "true or false",
                 [](const ordered_json& v) { return v.is_boolean(); });
  }
  // A list of texts.
  const ordered_json* texts(const ordered_json& object, const std::string& path, const char* key,
                            bool required) {
    const ordered_json* list = typed(object, path, key, required, "a list of texts",
                                     [](const ordered_json& v) { return v.is_array(); });
    if (list != nullptr)
      for (std::size_t i = 0; i < list->size(); ++i)
        if (!(*list)[i].is_string())
          add(fmt::format("{}.{}[{}]", path, key, i), fmt::format("{}, expected text", shown((*list)[i])));
    return list;
  }
  // An integer in [min, max].
  std::optional<long long> integer(const ordered_json& object, const std::string& path, const char* key,
                                   long long min, long long max) {
    const ordered_json* v =
        typed(object, path, key, true, fmt::format("a whole number from {} to {}", min, max),
              [](const ordered_json& v) { return v.is_number_integer(); });
    if (v == nullptr)
      return std::nullopt;
    // Compared as the type nlohmann holds, so 2^64 - 1 is not read as -1.
    long long n = 0;
    bool in_range = false;
    if (v->is_number_unsigned()) {
      const auto u = v->get<unsigned long long>();
      in_range = u <= static_cast<unsigned long long>(max) && static_cast<long long>(u) >= min;
      n = in_range ? static_cast<long long>(u) : 0;
    } else {
      n = v->get<long long>();
      in_range = n >= min && n <= max;
    }
    if (!in_range) {
      add(path.empty() ? std::string(key) : fmt::format("{}.{}", path, key),
          fmt::format("{} is out of range (expected a whole number from {} to {})", v->dump(), min, max));
      return std::nullopt;
    }
    return n;
  }
  // A cell of a row or a `where` value: a finite number, text, a boolean or null.
  void scalar(const ordered_json& value, const std::string& path) {
    if (value.is_object() || value.is_array())
      add(path, fmt::format("{}, expected a number, text, true, false or null", shown(value)));
    else if (value.is_number_float() && !std::isfinite(value.get<double>()))
      add(path, "not a finite number");
  }

 private:
  template <class Is>
  const ordered_json* typed(const ordered_json& object, const std::string& path, const char* key,
                            bool required, const std::string& expected, Is is) {
    const std::string at = path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
    const auto it = object.find(key);
    if (it == object.end()) {
      if (required)
        add(at, fmt::format("missing (expected {})", expected));
      return nullptr;
    }
    if (!is(*it)) {
      add(at, fmt::format("{}, expected {}", shown(*it), expected));
      return nullptr;
    }
    return &*it;
  }

  std::vector<std::string> problems_;
};

// "plots/<file>": a plain file name ending in .svg (what the study reader
// accepts for sweep.plots[].file), so a results.json cannot point merge's
// plots elsewhere.
bool plain_svg_name(const std::string& file) {
  return file.size() >= 5 && file.compare(file.size() - 4, 4, ".svg") == 0 &&
         file.find('/') == std::string::npos &&
         std::none_of(file.begin(), file.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

void check_plot(ResultsChecker& check, const ordered_json& plot, const std::string& path) {
  if (!plot.is_object()) {
    check.add(path, fmt::format("{}, expected a plot (an object with x, y, lines, ...)", shown(plot)));
    return;
  }
  check.known_keys(plot, path, {"x", "y", "lines", "where", "log_x", "log_y", "title", "file"});
  check.text(plot, path, "x");
  check.text(plot, path, "y");
  check.texts(plot, path, "lines", false);
  if (const auto it = plot.find("where"); it != plot.end()) {
    if (!it->is_object())
      check.add(path + ".where", fmt::format("{}, expected an object of column: value", shown(*it)));
    else
      for (const auto& [key, value] : it->items())
        check.scalar(value, fmt::format("{}.where.{}", path, key));
  }
  check.boolean(plot, path, "log_x");
  check.boolean(plot, path, "log_y");
  check.text(plot, path, "title", false);
  if (const auto* file = check.text(plot, path, "file", false);
      file != nullptr && !plain_svg_name(file->get<std::string>()))
    check.add(path + ".file", fmt::format("{}, expected a plain file name ending in .svg", shown(*file)));
}

// The point of a row: its number, which must be below the study's points.
std::optional<long long> row_point(ResultsChecker& check, const ordered_json& point, const std::string& path,
                                   std::optional<long long> points) {
  const std::string text = point.get<std::string>();
  const long long n = point_number(text);
  if (text.empty() || text.size() > 7 || n < 0 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    check.add(path, fmt::format("{}, expected the point's number (\"0042\")", shown(point)));
    return std::nullopt;
  }
  if (points && n >= *points) {
    check.add(path, fmt::format("point {} of a study of {} points", text, *points));
    return std::nullopt;
  }
  return n;
}

}  // namespace

ResultsDocument parse_results_json(const std::string& text) {
  ordered_json j;
  try {
    j = ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ResultsFormatError(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kResultsSchema)
    throw ResultsFormatError(std::string("not a trainsim results file (expected \"schema\": \"") +
                             kResultsSchema + "\")");
  ResultsChecker check;
  check.known_keys(j, "", {"schema", "trainsim_version", "study", "shard", "columns", "rows"});
  check.text(j, "", "trainsim_version");
  check.texts(j, "", "columns", true);

  ResultsDocument doc;
  std::optional<long long> points;
  if (const auto it = j.find("study"); it == j.end() || !it->is_object()) {
    check.add("study", it == j.end()
                           ? "missing (expected the study: name, file, id, points, parameters, plots)"
                           : fmt::format("{}, expected an object", shown(*it)));
  } else {
    const auto& study = *it;
    check.known_keys(study, "study", {"name", "description", "file", "id", "points", "parameters", "plots"});
    check.text(study, "study", "name");
    check.text(study, "study", "description", false);
    check.text(study, "study", "file");
    check.text(study, "study", "id");
    points = check.integer(study, "study", "points", 0, static_cast<long long>(kMaxResultPoints));
    check.texts(study, "study", "parameters", true);
    if (const auto plots = study.find("plots"); plots == study.end() || !plots->is_array())
      check.add("study.plots", plots == study.end()
                                   ? "missing (expected a list of plots)"
                                   : fmt::format("{}, expected a list of plots", shown(*plots)));
    else
      for (std::size_t i = 0; i < plots->size(); ++i)
        check_plot(check, (*plots)[i], fmt::format("study.plots[{}]", i));
    doc.study = study;
  }
  if (const auto it = j.find("shard"); it != j.end()) {
    if (!it->is_object()) {
      check.add("shard", fmt::format("{}, expected an object with index and count", shown(*it)));
    } else {
      check.known_keys(*it, "shard", {"index", "count"});
      const auto count = check.integer(*it, "shard", "count", 1, static_cast<long long>(kMaxResultPoints));
      const auto index =
          check.integer(*it, "shard", "index", 0, static_cast<long long>(kMaxResultPoints) - 1);
      if (count && index && *index >= *count)
        check.add("shard.index", fmt::format("{} is not below shard.count {}", *index, *count));
      else if (count && index)
        doc.shard = ShardInfo{static_cast<int>(*index), static_cast<int>(*count)};
    }
  }
  const auto rows = j.find("rows");
  if (rows == j.end() || !rows->is_array()) {
    check.add("rows", rows == j.end() ? "missing (expected a list of rows)"
                                      : fmt::format("{}, expected a list of rows", shown(*rows)));
    check.fail();
  }
  if (points && rows->size() > static_cast<std::size_t>(*points))
    check.add("rows", fmt::format("{} rows for a study of {} points", rows->size(), *points));
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const auto& r = (*rows)[i];
    const std::string path = fmt::format("rows[{}]", i);
    if (!r.is_object()) {
      check.add(path, fmt::format("{}, expected a row (an object with point, status, ...)", shown(r)));
      continue;
    }
    ResultRow row;
    bool good = true;
    if (const auto* point = check.text(r, path, "point");
        point == nullptr || !row_point(check, *point, path + ".point", points))
      good = false;
    if (const auto* status = check.text(r, path, "status")) {
      const std::string word = status->get<std::string>();
      if (word != kStatusOk && word != kStatusFailed && word != kStatusDropped) {
        check.add(path + ".status", fmt::format("{}, expected ok, failed or dropped", shown(*status)));
        good = false;
      }
    } else {
      good = false;
    }
    for (const auto& [key, value] : r.items()) {
      if (key == "point") {
        row.point = value.is_string() ? value.get<std::string>() : "";
      } else if (key == "status") {
        row.status = value.is_string() ? value.get<std::string>() : "";
      } else if (key == "exit_status") {
        if (const auto status = check.integer(r, path, "exit_status", 0, 255))
          row.exit_status = static_cast<int>(*status);
        else
          good = false;
      } else if (key == "reason") {
        if (const auto* reason = check.text(r, path, "reason", false))
          row.reason = reason->get<std::string>();
        else
          good = false;
      } else {
        check.scalar(value, fmt::format("{}.{}", path, key));
        if (is_parameter(doc, key))
          row.parameters[key] = value;
        else
          row.figures[key] = value;
      }
    }
    if (good)
      doc.rows.push_back(std::move(row));
  }
  check.throw_if_any();
  return doc;
}

ResultsDocument read_results_json(std::istream& in) {
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_results_json(text);
}

void sort_rows(std::vector<ResultRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const ResultRow& a, const ResultRow& b) {
    return point_number(a.point) < point_number(b.point);
  });
}

}  // namespace trainsim::analysis
