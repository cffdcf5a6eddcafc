// trainsim: the command-line entry point. Parses arguments and dispatches to a
// subcommand; every error path ends here with a message and an exit status:
// 0 success, 1 bad input (scenario, options), 2 internal error; 128 + N when
// stopped by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129, SIGPIPE 141:
// platforms/interruption.hpp, the one signal policy of every command).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "platforms/input_error.hpp"
#include "platforms/interruption.hpp"
#include "platforms/printable_text.hpp"
#include "platforms/problem_list.hpp"
#include "sim/cli/calibrate_command.hpp"
#include "sim/cli/collective_command.hpp"
#include "sim/cli/compare_command.hpp"
#include "sim/cli/diff_command.hpp"
#include "sim/cli/export_command.hpp"
#include "sim/cli/merge_command.hpp"
#include "sim/cli/plan_command.hpp"
#include "sim/cli/report_command.hpp"
#include "sim/cli/run_command.hpp"
#include "sim/cli/schema_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/validate_command.hpp"
#include "sim/scenario/run_size.hpp"
#include "trainsim_version.hpp"

namespace {

// A subcommand: its CLI::App and the call that runs it with its options.
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

template <class Options, class Add, class Run>
Subcommand subcommand(CLI::App& app, Add add, Run run) {
  auto options = std::make_shared<Options>();
  return {add(app, *options), [options, run]() { return run(*options); }};
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = trainsim::cli;
  // Before anything is written or forked; make_engine() puts it back after
  // SimGrid's engine replaces the SIGINT handler.
  trainsim::platforms::install_interruption_policy();
  CLI::App app{"trainsim: a discrete-event simulator of distributed LLM training clusters (SimGrid)",
               "trainsim"};
  app.set_version_flag("-V,--version", fmt::format("trainsim {}", trainsim::version_string));
  app.require_subcommand(1);
  const std::vector<Subcommand> subcommands{
      subcommand<cli::RunOptions>(app, cli::add_run_command, cli::run_command),
      subcommand<cli::CollectiveOptions>(app, cli::add_collective_command, cli::collective_command),
      subcommand<cli::SweepOptions>(app, cli::add_sweep_command, cli::sweep_command),
      subcommand<cli::MergeOptions>(app, cli::add_merge_command, cli::merge_command),
      subcommand<cli::CompareOptions>(app, cli::add_compare_command, cli::compare_command),
      subcommand<cli::PlanOptions>(app, cli::add_plan_command, cli::plan_command),
      subcommand<cli::ReportOptions>(app, cli::add_report_command, cli::report_command),
      subcommand<cli::ExportOptions>(app, cli::add_export_command, cli::export_command),
      subcommand<cli::SchemaOptions>(app, cli::add_schema_command, cli::schema_command),
      subcommand<cli::ValidateOptions>(app, cli::add_validate_command, cli::validate_command),
      subcommand<cli::CalibrateOptions>(app, cli::add_calibrate_command, cli::calibrate_command),
      subcommand<cli::DiffOptions>(app, cli::add_diff_command, cli::diff_command),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print as they are; an error quotes the
    // arguments, so its lines go out escaped (platforms/printable_text.hpp).
    std::ostringstream out, err;
    const int status = app.exit(e, out, err);
    std::cout << out.str();
    std::istringstream lines(err.str());
    for (std::string line; std::getline(lines, line);)
      std::cerr << trainsim::platforms::printable_text(line) << '\n';
    return status == 0 ? 0 : 1;
  }
  try {
    for (const auto& command : subcommands)
      if (command.app->parsed())
        return command.run();
    return 1;
  } catch (const trainsim::platforms::InputError& e) {
    // Each problem is already printable (InputError escapes them).
    for (const auto& problem : trainsim::platforms::printed_problems(e))
      std::cerr << "error: " << problem << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    // The process's or the machine's memory limit, not a bug (the commands
    // that make an estimate say it: sim/cli/run_command.cpp).
    std::cerr << "error: " << trainsim::scenario::out_of_memory_message("the command", nullptr) << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << trainsim::platforms::printable_text(e.what()) << '\n';
    return 2;
  }
}
