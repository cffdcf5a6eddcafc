#include "sim/cli/run_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "analysis/run_archive.hpp"
#include "sim/cli/balance_run.hpp"
#include "sim/cli/report_command.hpp"
#include "sim/input_error.hpp"
#include "sim/memory_check.hpp"
#include "sim/scenario.hpp"
#include "sim/simulation.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_run_command(CLI::App& app, RunOptions& options) {
  auto* cmd = app.add_subcommand("run", "Simulate one training iteration of a scenario");
  cmd->add_option("scenario", options.scenario, "Scenario YAML file")->required();
  cmd->add_option("-o,--out", options.out_dir,
                  "Directory for the outputs (summary.json, CSV tables, trace.json, SVG plots, run.trainsim; "
                  "default: runs/<scenario name>)");
  cmd->add_option(
      "-s,--set", options.overrides,
      "Override a scenario value, KEY=VALUE with a dotted key (repeatable), e.g. --set plan.pp=4");
  cmd->add_flag("--html", options.html, "Also write report.html, one self-contained page");
  cmd->add_flag("-q,--quiet", options.quiet, "Do not print the summary table");
  cmd->add_flag(
      "--allow-oom", options.allow_oom,
      "Simulate even when the plan does not fit in GPU memory (the summary still reports the peak)");
  cmd->add_option("--balance", options.balance,
                  "auto: search the layers per pipeline stage (and micro-batches per DP replica on mixed "
                  "clusters) that equalise stage times on the cluster's GPUs, simulate it and the even split "
                  "(into OUT/even/), and report the gain; off (default): the scenario as written")
      ->check(CLI::IsMember({"auto", "off"}));
  return cmd;
}

int run_command(const RunOptions& options) {
  if (options.balance == "auto")
    return run_balanced(options);
  const sim::Scenario scenario =
      sim::load_scenario(options.scenario, options.overrides, {.check_memory = !options.allow_oom});
  if (options.allow_oom)
    for (const auto& problem : sim::memory_problems(scenario))
      std::cerr << "warning: " << scenario.file << ": plan: " << problem
                << " (simulating anyway: --allow-oom)\n";
  const fs::path out_dir =
      options.out_dir.empty() ? fs::path("runs") / scenario.name : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw sim::InputError(
        {fmt::format("{}: cannot create the output directory: {}", out_dir.string(), ec.message())});

  std::string scenario_text;
  {
    std::ifstream in(options.scenario, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    scenario_text = text.str();
  }
  const sim::SimulationResult result = sim::simulate(scenario);
  save_run(out_dir, scenario, scenario_text, options.overrides, result.graph, result.timeline);
  write_reports(out_dir, scenario, result.graph, result.timeline, options.html, options.quiet,
                {analysis::kRunArchiveFile});
  return 0;
}

}  // namespace trainsim::cli
