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
#include "platforms/interruption.hpp"
#include "platforms/problem_list.hpp"
#include "sim/study/study_folder.hpp"
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

namespace {

// Whether `inner` is `outer` or inside it, symbolic links resolved.
bool is_within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(outer), ec);
  auto i = a.begin();
  for (auto o = b.begin(); o != b.end(); ++o, ++i) {
    if (o->empty())
      continue;  // the trailing "" of a path ending in '/'
    if (i == a.end() || *i != *o)
      return false;
  }
  return true;
}

// merge replaces --out's results.csv, results.json, plots/ and report.html:
// into a shard that would overwrite the shard itself (merge a0 a1 --out a0
// left a0 unmergeable). --out may hold the shards in folders of their own,
// as `sweep --slurm` lays them out (OUT/shards/shard-I), but not under
// plots/, which merge rewrites.
void check_out_is_apart_from_the_shards(const MergeOptions& options) {
  platforms::ErrorList errors;
  const fs::path out(options.out_dir);
  for (const auto& dir : options.shard_dirs) {
    if (is_within(out, dir)) {
      std::string shard = fs::path(dir).lexically_normal().string();
      while (shard.size() > 1 && shard.back() == '/')
        shard.pop_back();
      const bool same = is_within(dir, out);
      errors.add(
          fmt::format("--out {}: is {} shard {} (merge would {}); give another folder, e.g. --out {}-merged",
                      options.out_dir, same ? "the" : "inside the", dir,
                      same ? "overwrite the shard's results" : "write its results into the shard", shard));
    } else if (is_within(dir, out / "plots"))
      errors.add(
          fmt::format("--out {}: shard {} is inside its plots/ folder, which merge rewrites; give "
                      "another folder",
                      options.out_dir, dir));
  }
  errors.throw_if_any();
}

}  // namespace

int merge_command(const MergeOptions& options) {
  check_out_is_apart_from_the_shards(options);
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

  platforms::set_interruption_note(
      fmt::format("the merged results in {} are not all written (each file is whole): run the command again",
                  options.out_dir));
  const auto outputs = sim::write_study_outputs(options.out_dir, merged, sim::plots_of(merged), options.html);
  sim::remove_stale_study_files(options.out_dir, outputs.written, options.html);
  platforms::set_interruption_note(fmt::format("the merged results in {} are complete", options.out_dir));
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
  for (const auto& n : outputs.plot_notes)
    std::cerr << fmt::format("note: {}\n", n);
  for (const auto& e : outputs.plot_errors)
    std::cerr << fmt::format("error: {}\n", e);
  return outputs.plot_errors.empty() ? 0 : 1;
}

}  // namespace trainsim::cli
