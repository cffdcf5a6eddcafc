// trainsim: the command-line entry point. Parses arguments and dispatches to a
// subcommand; every error path ends here with a message and an exit status:
// 0 success, 1 bad input (scenario, options), 2 internal error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "sim/cli/collective_command.hpp"
#include "sim/cli/compare_command.hpp"
#include "sim/cli/merge_command.hpp"
#include "sim/cli/plan_command.hpp"
#include "sim/cli/report_command.hpp"
#include "sim/cli/run_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/input_error.hpp"
#include "trainsim_version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"trainsim: a discrete-event simulator of distributed LLM training clusters (SimGrid)",
               "trainsim"};
  app.set_version_flag("-V,--version", fmt::format("trainsim {}", trainsim::version_string));
  app.require_subcommand(1);
  trainsim::cli::RunOptions run_options;
  auto* run = trainsim::cli::add_run_command(app, run_options);
  trainsim::cli::CollectiveOptions collective_options;
  auto* collective = trainsim::cli::add_collective_command(app, collective_options);
  trainsim::cli::SweepOptions sweep_options;
  auto* sweep = trainsim::cli::add_sweep_command(app, sweep_options);
  trainsim::cli::MergeOptions merge_options;
  auto* merge = trainsim::cli::add_merge_command(app, merge_options);
  trainsim::cli::CompareOptions compare_options;
  auto* compare = trainsim::cli::add_compare_command(app, compare_options);
  trainsim::cli::PlanOptions plan_options;
  auto* plan = trainsim::cli::add_plan_command(app, plan_options);
  trainsim::cli::ReportOptions report_options;
  auto* report = trainsim::cli::add_report_command(app, report_options);
  trainsim::cli::ValidateOptions validate_options;
  auto* validate = trainsim::cli::add_validate_command(app, validate_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : 1;
  }
  try {
    if (run->parsed())
      return trainsim::cli::run_command(run_options);
    if (collective->parsed())
      return trainsim::cli::collective_command(collective_options);
    if (sweep->parsed())
      return trainsim::cli::sweep_command(sweep_options);
    if (merge->parsed())
      return trainsim::cli::merge_command(merge_options);
    if (compare->parsed())
      return trainsim::cli::compare_command(compare_options);
    if (plan->parsed())
      return trainsim::cli::plan_command(plan_options);
    if (report->parsed())
      return trainsim::cli::report_command(report_options);
    if (validate->parsed())
      return trainsim::cli::validate_command(validate_options);
    return 1;
  } catch (const trainsim::sim::InputError& e) {
    for (const auto& problem : e.problems())
      std::cerr << "error: " << problem << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << '\n';
    return 2;
  }
}
