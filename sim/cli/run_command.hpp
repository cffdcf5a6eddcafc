#pragma once
// `trainsim run`: simulate one scenario, print the summary, write the outputs.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct RunOptions {
  std::string scenario;
  std::string out_dir;  // empty: runs/<scenario name>
  std::vector<std::string> overrides;
  bool html = false;
  bool quiet = false;
  // Simulate a plan even when the memory model says it does not fit.
  bool allow_oom = false;
  // Consecutive iterations replayed (stragglers differ per iteration).
  int iterations = 1;
  // Runs with seeds seed .. seed + seeds - 1 (confidence intervals).
  int seeds = 1;
  // --balance auto: search a balanced layer partition (and DP shares), and
  // simulate it against the even split (sim/cli/balance_run.hpp). "off":
  // the scenario as written.
  std::string balance = "off";
  // A progress line on stderr during the replay (also when stderr is a
  // terminal).
  bool progress = false;
};

// Registers the subcommand; `options` must outlive parsing.
CLI::App* add_run_command(CLI::App& app, RunOptions& options);
// Returns the process exit status.
int run_command(const RunOptions& options);

}  // namespace trainsim::cli
