#include "analysis/studies/results_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/studies/figure_names.hpp"
#include "platforms/names.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string text_of(const ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

bool matches(const ordered_json& value, const ordered_json& wanted) {
  if (value == wanted)
    return true;
  return !value.is_null() && text_of(value) == text_of(wanted);
}

// A row's value of a column, or what its absence stands for (a BF16 point
// has no plan.precision: it plots, and matches `where`, as bf16).
ordered_json plotted_cell(const ResultRow& row, const std::string& column) {
  auto value = cell(row, column);
  return value.is_null() ? value_when_absent(column) : value;
}

}  // namespace

std::string PlotSpec::title_or_default() const {
  if (!title.empty())
    return title;
  std::vector<std::string> by;
  for (const auto& l : lines)
    by.push_back(figure_meaning(l).label);
  const std::string ys = figure_meaning(y).label, xs = figure_meaning(x).label;
  return lines.empty() ? fmt::format("{} vs {}", ys, xs)
                       : fmt::format("{} vs {}, by {}", ys, xs, join(by, ", "));
}

std::string PlotSpec::file_or_default() const {
  if (!file.empty())
    return file;
  std::string name = fmt::format("{}-vs-{}", y, x);
  if (!lines.empty())
    name += fmt::format("-by-{}", join(lines, "-"));
  // A name made from the columns (platforms/names.hpp), with room for ".svg".
  std::string base = platforms::name_from_text(name, "plot");
  base.resize(std::min(base.size(), platforms::kMaxNameLength - 4));
  return base + ".svg";
}

ordered_json PlotSpec::to_json() const {
  ordered_json j;
  j["x"] = x;
  j["y"] = y;
  j["lines"] = lines;
  ordered_json w = ordered_json::object();
  for (const auto& [key, value] : where)
    w[key] = value;
  j["where"] = std::move(w);
  j["log_x"] = log_x;
  j["log_y"] = log_y;
  j["title"] = title_or_default();
  j["file"] = file_or_default();
  return j;
}

PlotSpec PlotSpec::from_json(const ordered_json& j) {
  try {
    PlotSpec spec;
    spec.x = j.at("x").get<std::string>();
    spec.y = j.at("y").get<std::string>();
    spec.lines = j.value("lines", std::vector<std::string>{});
    if (j.contains("where"))
      for (const auto& [key, value] : j["where"].items())
        spec.where.emplace_back(key, value);
    spec.log_x = j.value("log_x", false);
    spec.log_y = j.value("log_y", false);
    spec.title = j.value("title", "");
    spec.file = j.value("file", "");
    return spec;
  } catch (const nlohmann::json::exception& e) {
    throw ResultsFormatError(std::string("a plot spec in results.json is malformed: ") + e.what());
  }
}

LinePlot build_results_plot(const PlotSpec& spec, const ResultsDocument& doc) {
  const auto columns = result_columns(doc);
  // A column whose absence stands for a value (plan.precision: bf16) is
  // there even when no row names it: a study of BF16 points alone, or its
  // `--only` subset, plots as one of BF16 and FP8 points does.
  auto require_column = [&](const std::string& key, const std::string& role) {
    if (std::find(columns.begin(), columns.end(), key) == columns.end() && value_when_absent(key).is_null())
      throw PlotColumnAbsent(
          fmt::format("{} '{}' is not a column of the results (columns: {})", role, key, join(columns, ", ")),
          role, key);
  };
  require_column(spec.x, "x");
  require_column(spec.y, "y");
  for (const auto& l : spec.lines)
    require_column(l, "lines");
  for (const auto& [key, value] : spec.where)
    require_column(key, "where");

  std::vector<const ResultRow*> rows;
  for (const auto& row : doc.rows) {
    if (row.status != kStatusOk)
      continue;
    bool keep = true;
    for (const auto& [key, value] : spec.where)
      keep = keep && matches(plotted_cell(row, key), value);
    if (keep)
      rows.push_back(&row);
  }

  LinePlot plot;
  plot.title = spec.title_or_default();
  std::vector<std::string> line_labels;
  for (const auto& l : spec.lines)
    line_labels.push_back(figure_meaning(l).label);
  plot.legend_title = join(line_labels, ", ");
  plot.x_scale = spec.log_x ? AxisScale::log : AxisScale::linear;
  plot.y_scale = spec.log_y ? AxisScale::log : AxisScale::linear;

  const bool numeric_x = std::all_of(rows.begin(), rows.end(), [&](const ResultRow* r) {
    const auto v = plotted_cell(*r, spec.x);
    return v.is_number();
  });
  std::vector<std::string> categories;  // in order of first appearance
  std::map<std::string, std::size_t> series_index;
  // For the duplicate check: (series, x text) -> row.
  std::map<std::pair<std::size_t, std::string>, const ResultRow*> seen;
  for (const ResultRow* row : rows) {
    const auto yv = cell(*row, spec.y);
    if (yv.is_null())
      continue;  // this point has no such figure
    if (!yv.is_number())
      throw PlotError(
          fmt::format("y '{}' is not a number at point {} ({})", spec.y, row->point, text_of(yv)));
    const auto xv = plotted_cell(*row, spec.x);
    if (xv.is_null())
      continue;
    std::vector<std::string> label_parts;
    for (const auto& l : spec.lines) {
      const auto v = plotted_cell(*row, l);
      label_parts.push_back(spec.lines.size() == 1 ? text_of(v)
                                                   : fmt::format("{}={}", last_component(l), text_of(v)));
    }
    const std::string label = join(label_parts, ", ");
    auto [it, added] = series_index.emplace(label, plot.series.size());
    if (added)
      plot.series.push_back(PlotSeries{label, {}});
    const std::size_t s = it->second;

    double x = 0;
    if (numeric_x) {
      x = xv.get<double>();
    } else {
      const std::string name = text_of(xv);
      auto pos = std::find(categories.begin(), categories.end(), name);
      if (pos == categories.end())
        pos = categories.insert(categories.end(), name);
      x = static_cast<double>(pos - categories.begin());
    }
    auto [dup, fresh] = seen.emplace(std::make_pair(s, text_of(xv)), row);
    if (!fresh) {
      std::vector<std::string> differing;
      for (const auto& c : columns)
        if (c != "point" && c != spec.y && cell(*row, c) != cell(*dup->second, c) &&
            doc.study.contains("parameters") &&
            std::find(doc.study["parameters"].begin(), doc.study["parameters"].end(), c) !=
                doc.study["parameters"].end())
          differing.push_back(c);
      throw PlotError(fmt::format(
          "points {} and {} fall on the same line at {} = {}; they differ in {}: add {} to `lines` or fix it "
          "with `where`",
          dup->second->point, row->point, spec.x, text_of(xv),
          differing.empty() ? std::string("no parameter") : join(differing, ", "),
          differing.empty() ? std::string("a parameter") : differing.front()));
    }
    plot.series[s].points.push_back(PlotPoint{x, yv.get<double>()});
  }
  plot.x_categories = categories;
  for (auto& s : plot.series)
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
  // Axes for people: labels with units, values in them (fractions in
  // percent, seconds in ms when they are small, bytes in GiB).
  double x_max = 0, y_max = 0;
  for (const auto& s : plot.series)
    for (const auto& p : s.points) {
      x_max = std::max(x_max, std::abs(p.x));
      y_max = std::max(y_max, std::abs(p.y));
    }
  const AxisUnit yu = axis_unit(spec.y, y_max);
  const AxisUnit xu = numeric_x ? axis_unit(spec.x, x_max) : AxisUnit{figure_meaning(spec.x).label, 1};
  plot.y_label = yu.label;
  plot.x_label = xu.label;
  for (auto& s : plot.series)
    for (auto& p : s.points) {
      p.y *= yu.scale;
      if (numeric_x)
        p.x *= xu.scale;
    }
  return plot;
}

}  // namespace trainsim::analysis
