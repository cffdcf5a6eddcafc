#include "sim/cli/merge_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "analysis/studies/results_table.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/problem_list.hpp"
#include "sim/study/study_results.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_merge_command(CLI::App& app, MergeOptions& options) {
  auto* cmd =
      app.add_subcommand("merge", "Combine the shards of a study (sweep --shard I/N) into one result");
  cmd->add_option("shards", options.shard_dirs, "The shards' output directories (each with a results.json)")
      ->required();
  cmd->add_option("-o,--out", options.out_dir, "Directory for the merged results.csv, results.json and plots")
      ->required();
  cmd->add_flag("--html", options.html,
                "Also write report.html: the plots and the results table in one page");
  return cmd;
}

int merge_command(const MergeOptions& options) {
  platforms::ErrorList errors;
  std::vector<std::pair<std::string, analysis::ResultsDocument>> shards;
  for (const auto& dir : options.shard_dirs) {
    const fs::path file = fs::path(dir) / "results.json";
    std::error_code ec;
    if (!fs::exists(file, ec) && !ec) {
      errors.add(fmt::format(
          "{}: cannot open (expected the output directory of `trainsim sweep --shard I/N`)", file.string()));
      continue;
    }
    try {
      auto doc = analysis::parse_results_json(
          platforms::read_input_file(file.string(), "results file", platforms::kMaxTableInputBytes));
      if (!doc.shard)
        errors.add(fmt::format(
            "{}: not a shard (written without --shard I/N); it already holds a whole study", file.string()));
      else
        shards.emplace_back(file.string(), std::move(doc));
    } catch (const analysis::ResultsFormatError& e) {
      for (const auto& problem : e.problems())
        errors.add(fmt::format("{}: {}", file.string(), problem));
    } catch (const platforms::InputError& e) {
      for (const auto& problem : e.problems())
        errors.add(problem);
    }
  }
  errors.throw_if_any();

  // The shards must be every shard of one study, each once.
  const auto& [first_file, first] = shards.front();
  const std::string study_id = first.study.value("id", "");
  const int count = first.shard->count;
  std::map<int, std::string> seen;
  for (const auto& [file, doc] : shards) {
    if (doc.study.value("id", "") != study_id)
      errors.add(
          fmt::format("{}: belongs to another study (id {}) than {} (id {}): the study file or its "
                      "--set options differ",
                      file, doc.study.value("id", ""), first_file, study_id));
    else if (doc.shard->count != count)
      errors.add(fmt::format("{}: is shard {}/{}, but {} is one of {} shards", file, doc.shard->index,
                             doc.shard->count, first_file, count));
    else if (auto [it, fresh] = seen.emplace(doc.shard->index, file); !fresh)
      errors.add(
          fmt::format("{}: shard {}/{} is given twice (also {})", file, doc.shard->index, count, it->second));
  }
  errors.throw_if_any();
  std::vector<std::string> missing;
  for (int i = 0; i < count; ++i)
    if (seen.count(i) == 0)
      missing.push_back(fmt::format("{}/{}", i, count));
  if (!missing.empty()) {
    // A results.json may claim up to a million shards: the first few name it.
    std::string list;
    for (std::size_t i = 0; i < std::min(missing.size(), platforms::kMaxPrintedProblems); ++i)
      list.append(list.empty() ? "" : ", ").append(missing[i]);
    if (missing.size() > platforms::kMaxPrintedProblems)
      list += fmt::format(" and {} more",
                          platforms::with_thousands(missing.size() - platforms::kMaxPrintedProblems));
    throw platforms::InputError(
        {fmt::format("missing shard{} {} of study {} (run them with `trainsim sweep {} --shard "
                     "I/{}`)",
                     missing.size() > 1 ? "s" : "", list, first.study.value("name", ""),
                     first.study.value("file", ""), count)});
  }

  analysis::ResultsDocument merged;
  merged.study = first.study;
  std::set<std::string> points;
  for (auto& [file, doc] : shards)
    for (auto& row : doc.rows) {
      if (!points.insert(row.point).second)
        errors.add(fmt::format("{}: point {} appears in two shards", file, row.point));
      merged.rows.push_back(std::move(row));
    }
  errors.throw_if_any();
  analysis::sort_rows(merged.rows);
  const std::size_t expected = first.study.value("points", std::size_t{0});
  if (merged.rows.size() != expected)
    throw platforms::InputError(
        {fmt::format("the shards hold {} points but the study has {}", merged.rows.size(), expected)});

  const auto outputs = sim::write_study_outputs(options.out_dir, merged, sim::plots_of(merged), options.html);
  std::size_t ok = 0, failed = 0, dropped = 0;
  for (const auto& row : merged.rows) {
    ok += row.status == analysis::kStatusOk;
    failed += row.status == analysis::kStatusFailed;
    dropped += row.status == analysis::kStatusDropped;
  }
  std::cout << fmt::format("merged {} shards of {}: {} points, {} ok, {} failed, {} dropped\nwrote", count,
                           first.study.value("name", ""), merged.rows.size(), ok, failed, dropped);
  for (const auto& f : outputs.written)
    std::cout << ' ' << f.string();
  std::cout << '\n';
  for (const auto& e : outputs.plot_errors)
    std::cerr << fmt::format("error: {}\n", e);
  return outputs.plot_errors.empty() ? 0 : 1;
}

}  // namespace trainsim::cli
