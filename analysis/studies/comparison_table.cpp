#include "analysis/studies/comparison_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>
#include <set>

#include "analysis/studies/figure_names.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The scenario's inputs, echoed in summary.json: shown only where they differ.
bool is_input(const std::string& key) {
  return key == "scenario" || starts_with(key, "cluster.") || starts_with(key, "model.") ||
         starts_with(key, "plan.");
}

std::string cell_text(const ordered_json& value) {
  if (value.is_null())
    return "n/a";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "0.0%", "0s", "0B": a figure displayed as zero (no digit but 0).
bool shows_zero(const std::string& cell) {
  return std::none_of(cell.begin(), cell.end(), [](char c) { return c >= '1' && c <= '9'; });
}

struct Row {
  std::string label;
  std::vector<std::string> cells;
  bool same_everywhere = true;  // every ratio to the first reads 1.00x
};

}  // namespace

const std::vector<HeadlineFigure>& headline_figures() {
  static const std::vector<HeadlineFigure> figures{
      {"iteration time", {"iteration_time_s"}},
      {"throughput (tokens/s)", {"tokens_per_s"}},
      {"tokens/s per GPU", {"tokens_per_s_per_gpu"}},
      {"TFLOP/s per GPU", {"tflops_per_gpu"}},
      {"MFU", {"mfu"}},
      // The same run under the definitions publications use
      // (analysis/mfu_definitions.hpp): compare with a published MFU
      // counted the same way.
      {"MFU (6N)", {"mfu_6n"}},
      {"MFU (PaLM)", {"mfu_palm"}},
      {"MFU (NVIDIA)", {"mfu_nvidia"}},
      {"bubble", {"bubble_fraction"}},
      {"exposed communication", {"exposed_comm_fraction"}},
      // Names the memory and energy reports may use; the first one present wins.
      {"peak memory", {"peak_memory_bytes", "memory.peak_bytes", "memory.peak_memory_bytes"}},
      {"energy per token", {"energy_per_token_J", "energy.per_token_J", "energy.energy_per_token_J"}},
  };
  return figures;
}

void write_comparison_table(std::ostream& out, const std::vector<ComparedRun>& runs) {
  if (runs.empty())
    return;
  const std::size_t n = runs.size();
  std::vector<Row> inputs, headline, others;

  auto figure_row = [&](const std::string& label, const std::string& key_of_first_present,
                        const std::vector<std::string>& keys) {
    Row row{label, {}};
    std::optional<double> first;
    std::string first_cell;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& f = runs[i].figures;
      if (f.is_null()) {
        row.cells.push_back("failed");
        continue;
      }
      ordered_json v;
      std::string key = key_of_first_present;
      for (const auto& k : keys)
        if (f.contains(k)) {
          v = f[k];
          key = k;
          break;
        }
      if (!v.is_number()) {
        row.cells.push_back(cell_text(v));
        continue;
      }
      const double value = v.get<double>();
      std::string cell = format_figure(key, value);
      // A GPU, a stage, a seed: a name in numbers, with no ratio.
      const bool ratio = figure_meaning(key).kind != FigureKind::identifier;
      if (i == 0) {
        first = value;
        first_cell = cell;
      } else if (ratio && first && cell == first_cell && shows_zero(cell)) {
        // Both read zero (a bubble of 1e-18 s against none): a ratio of
        // rounding noise would say nothing, or something huge.
      } else if (ratio && first && *first != 0) {
        cell += fmt::format(" ({})", units::format_ratio(value / *first));
        row.same_everywhere = row.same_everywhere && std::abs(value / *first - 1) < 0.005;
      } else if (!ratio && first) {
        row.same_everywhere = row.same_everywhere && value == *first;
      }
      row.cells.push_back(cell);
    }
    return row;
  };

  // Every key, in order of first appearance.
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const auto& r : runs)
    if (r.figures.is_object())
      for (const auto& [key, value] : r.figures.items())
        if (seen.insert(key).second)
          keys.push_back(key);
  std::set<std::string> shown;
  std::size_t negligible = 0;
  for (const auto& h : headline_figures()) {
    headline.push_back(figure_row(h.label, h.keys.front(), h.keys));
    shown.insert(h.keys.begin(), h.keys.end());
  }
  for (const auto& key : keys) {
    if (shown.count(key) != 0)
      continue;
    std::set<std::string> values;
    bool numeric = true;
    for (const auto& r : runs) {
      if (!r.figures.is_object())
        continue;  // a failed run differs in nothing
      const auto v = r.figures.contains(key) ? r.figures[key] : ordered_json();
      values.insert(cell_text(v));
      numeric = numeric && (v.is_number() || v.is_null());
    }
    if (values.size() <= 1)
      continue;  // the same everywhere: nothing to compare
    if (is_input(key)) {
      Row row{key, {}};
      for (const auto& r : runs)
        row.cells.push_back(r.figures.is_object() && r.figures.contains(key) ? cell_text(r.figures[key])
                                                                             : "n/a");
      inputs.push_back(row);
    } else if (numeric) {
      auto row = figure_row(key, key, {key});
      // Figures that differ by less than the ratio's precision say nothing.
      if (row.same_everywhere)
        ++negligible;
      else
        others.push_back(std::move(row));
    }
  }

  std::size_t label_width = 0;
  std::vector<std::size_t> widths(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    widths[i] = runs[i].name.size();
  for (const auto* group : {&inputs, &headline, &others})
    for (const auto& row : *group) {
      label_width = std::max(label_width, row.label.size());
      for (std::size_t i = 0; i < n; ++i)
        widths[i] = std::max(widths[i], row.cells[i].size());
    }
  auto print_row = [&](const std::string& label, const std::vector<std::string>& cells) {
    std::string line = fmt::format("  {:<{}}", label, label_width);
    for (std::size_t i = 0; i < n; ++i)
      line += fmt::format("   {:>{}}", cells[i], widths[i]);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out << line << '\n';
  };
  std::vector<std::string> names;
  for (const auto& r : runs)
    names.push_back(r.name);
  out << fmt::format("{} variants, ratios to the first ({})\n\n", n, runs.front().name);
  print_row("", names);
  if (!inputs.empty()) {
    out << "inputs that differ\n";
    for (const auto& row : inputs)
      print_row(row.label, row.cells);
  }
  out << "figures\n";
  for (const auto& row : headline)
    print_row(row.label, row.cells);
  if (!others.empty()) {
    out << "other figures that differ\n";
    for (const auto& row : others)
      print_row(row.label, row.cells);
  }
  if (negligible > 0)
    out << fmt::format("({} more figure{} differ{} by less than 0.5%: results.csv has them all)\n",
                       negligible, negligible == 1 ? "" : "s", negligible == 1 ? "s" : "");
  for (const auto& r : runs)
    if (r.figures.is_null())
      out << fmt::format("\n{} failed: {}\n", r.name, r.error);
}

}  // namespace trainsim::analysis
