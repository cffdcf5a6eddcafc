#include "sim/cli/compare_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "analysis/studies/comparison_table.hpp"
#include "platforms/input_error.hpp"
#include "platforms/interruption.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/study/point_runner.hpp"
#include "sim/study/study_file.hpp"
#include "sim/study/study_folder.hpp"
#include "sim/study/study_points.hpp"
#include "sim/study/study_results.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options) {
  auto* cmd = app.add_subcommand(
      "compare",
      "Simulate variants in parallel and print their figures side by side, with ratios to the first");
  cmd->add_option(
         "files", options.files,
         "scenario::Scenario files, or study files with a `variants` section (each variant is compared)")
      ->required();
  cmd->add_option(
      "-o,--out", options.out_dir,
      "Directory for each variant's outputs and results.csv / results.json (default: runs/compare)");
  cmd->add_option("-j,--jobs", options.jobs, "Worker processes (default: one per processor)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("-s,--set", options.overrides,
                  "Override a scenario value in every variant, KEY=VALUE with a dotted key (repeatable)");
  cmd->add_flag("-q,--quiet", options.quiet, "No progress display");
  cmd->add_flag("--allow-oom", options.allow_oom,
                "Simulate the variants whose plan does not fit in GPU memory instead of refusing them (each "
                "summary still reports its peak and fits_in_memory: false)");
  return cmd;
}

int compare_command(const CompareOptions& options) {
  struct Variant {
    std::string name;
    sim::StudyPoint point;
  };
  std::vector<Variant> variants;
  platforms::ErrorList errors;
  for (const auto& file : options.files) {
    const sim::StudyFile study = sim::read_study_file(file);
    if (study.has_sweep) {
      errors.add(
          fmt::format("{}: has a `sweep` section; run sweeps with `trainsim sweep {}` (compare takes "
                      "scenario files and `variants` sections)",
                      file, file));
      continue;
    }
    for (auto& point : sim::prepare_points(study, options.overrides,
                                           scenario::with_size_guard({.check_memory = !options.allow_oom}))) {
      const std::string name =
          study.has_variants ? point.parameters["variant"].get<std::string>() : study.name;
      if (point.dropped)
        errors.add(fmt::format("{}: variant {} cannot run: {}", file, name, *point.dropped));
      variants.push_back(Variant{name, std::move(point)});
    }
  }
  errors.throw_if_any();
  if (variants.size() < 2)
    throw platforms::InputError({fmt::format(
        "compare needs at least two variants, got {} (give several scenario files, or a study file with a "
        "`variants` section)",
        variants.size())});

  // Unique names and folders, in the order given.
  std::set<std::string> names, folders;
  std::vector<sim::PointJob> jobs;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    auto& v = variants[i];
    std::string name = v.name;
    for (int n = 2; names.count(name) != 0; ++n)
      name = fmt::format("{}-{}", v.name, n);
    v.name = name;
    names.insert(name);
    // Variant and scenario names are names (platforms/names.hpp), so a
    // variant's folder is its name, made unique.
    std::string folder = name;
    for (int n = 2; folders.count(folder) != 0; ++n)
      folder = fmt::format("{}-{}", name, n);
    folders.insert(folder);
    v.point.id = folder;
    v.point.index = i;
    v.point.parameters = nlohmann::ordered_json::object();
    v.point.parameters["variant"] = name;
    // Progress lines name the folder; the variant's name only when it differs.
    jobs.push_back(sim::PointJob{folder, folder == name ? "" : name, v.point.scenario_yaml});
  }

  sim::RunnerOptions runner;
  runner.root = options.out_dir.empty() ? fs::path("runs") / "compare" : fs::path(options.out_dir);
  runner.jobs =
      options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  runner.resume = false;  // a comparison always simulates what it prints
  runner.trainsim_exe = sim::current_executable();
  if (options.allow_oom)
    runner.run_arguments.push_back("--allow-oom");
  runner.progress = options.quiet ? sim::ProgressStyle::none : sim::default_progress_style();

  std::vector<sim::PointOutcome> outcomes;
  try {
    outcomes = sim::run_points(jobs, runner, std::cerr);
  } catch (const sim::Interrupted& e) {
    std::cerr << platforms::interruption_message(
        e.signal(), fmt::format("{} of {} variants finished in {} (a comparison simulates them all again)",
                                e.finished(), e.total(), runner.root.string()));
    return 128 + e.signal();
  }
  platforms::set_interruption_note(
      fmt::format("every variant finished in {}; the comparison is not all written: run the command again",
                  runner.root.string()));

  // The variants' folders of an earlier comparison in the same folder go
  // (sim/study/study_folder.hpp).
  if (const auto removed = sim::describe_removed_points(sim::remove_other_points(runner.root, folders));
      !removed.empty())
    std::cerr << fmt::format("compare: {}\n", removed);

  analysis::ResultsDocument doc;
  std::string files;
  for (const auto& f : options.files)
    files.append(files.empty() ? "" : " ").append(f);
  std::vector<sim::StudyPoint> points;
  for (const auto& v : variants)
    points.push_back(v.point);
  doc.study["name"] = "compare";
  doc.study["file"] = files;
  doc.study["id"] = sim::study_fingerprint(points);
  doc.study["points"] = variants.size();
  doc.study["parameters"] = nlohmann::ordered_json::array({"variant"});
  doc.study["plots"] = nlohmann::ordered_json::array();
  std::vector<analysis::ComparedRun> runs;
  int status = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& outcome = outcomes[i];
    doc.rows.push_back(sim::point_row(variants[i].point, &outcome));
    if (outcome.state == sim::PointState::failed) {
      runs.push_back({variants[i].name, nullptr, outcome.error});
      status = std::max(status, outcome.exit_status == 1 ? 1 : 2);
    } else {
      runs.push_back({variants[i].name, analysis::flatten_summary(outcome.summary), ""});
    }
  }
  const auto outputs = sim::write_study_outputs(runner.root, doc, {}, false);
  platforms::set_interruption_note(fmt::format("the comparison in {} is complete", runner.root.string()));
  analysis::write_comparison_table(std::cout, runs);
  std::cout << fmt::format("\noutputs in {}/<variant>/; table in {}\n", runner.root.string(),
                           outputs.written.front().string());
  return status;
}

}  // namespace trainsim::cli
