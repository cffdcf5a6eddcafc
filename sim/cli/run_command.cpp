#include "sim/cli/run_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "analysis/reporters.hpp"
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
                  "Directory for summary.json, timeline.csv and trace.json (default: runs/<scenario name>)");
  cmd->add_option(
      "-s,--set", options.overrides,
      "Override a scenario value, KEY=VALUE with a dotted key (repeatable), e.g. --set plan.pp=4");
  cmd->add_flag("-q,--quiet", options.quiet, "Do not print the summary table");
  cmd->add_flag(
      "--allow-oom", options.allow_oom,
      "Simulate even when the plan does not fit in GPU memory (the summary still reports the peak)");
  return cmd;
}

namespace {
void write_file(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  write(out);
  if (!out)
    throw std::runtime_error(fmt::format("error while writing {}", path.string()));
}
}  // namespace

int run_command(const RunOptions& options) {
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

  const sim::SimulationResult result = sim::simulate(scenario);
  const analysis::RunContext run{scenario.name,  scenario.file, scenario.cluster,
                                 scenario.model, scenario.plan, result.graph};
  write_file(out_dir / "summary.json",
             [&](std::ostream& o) { analysis::write_summary_json(o, run, result.summary); });
  write_file(out_dir / "timeline.csv",
             [&](std::ostream& o) { analysis::write_timeline_csv(o, run, result.timeline); });
  write_file(out_dir / "trace.json",
             [&](std::ostream& o) { analysis::write_chrome_trace(o, run, result.timeline); });
  if (!options.quiet) {
    analysis::write_terminal_summary(std::cout, run, result.summary);
    std::cout << fmt::format("\nwrote {}/{{summary.json, timeline.csv, trace.json}}\n", out_dir.string());
  }
  return 0;
}

}  // namespace trainsim::cli
