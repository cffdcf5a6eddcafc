#pragma once
// `trainsim run`: simulate one scenario, print the summary, write the outputs.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sim/scenario/run_size.hpp"
#include "sim/scenario/scenario.hpp"

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
  // Show the progress line even when stderr is not a terminal.
  bool progress = false;
  // --max-memory SIZE: the size guard's limit (default: the memory available).
  std::string max_memory;
  // --chakra PATH: replay this Chakra trace on the scenario's cluster (the
  // scenario's `workload.chakra`, relative to the current directory).
  std::string chakra;
  // --trace auto|full|replica: what trace.json holds.
  std::string trace = "auto";
  // --fold / --no-fold (docs/performance.md, "The fold"); neither: folded
  // from sim::kFoldByDefaultGpus GPUs on, the full replay below.
  bool fold = false;
  bool no_fold = false;
};

// How `run` loads its scenario: the memory check unless --allow-oom, and the
// size guard (sim/scenario/run_size.hpp) with --max-memory or the memory
// available. Throws InputError for a malformed --max-memory.
scenario::LoadOptions run_load_options(const RunOptions& options);
// Says the size estimate up front (stderr) when the run will take a while;
// returns it. `guarded`: the estimate the loader's size guard already made
// (counting the task graph again would cost as much again).
scenario::RunSize note_long_run(const scenario::Scenario& scenario, const RunOptions& options,
                                const scenario::RunSize* guarded = nullptr);

// Registers the subcommand; `options` must outlive parsing.
CLI::App* add_run_command(CLI::App& app, RunOptions& options);
// Returns the process exit status.
int run_command(const RunOptions& options);

// What the loader noted (a preset given with --set replacing the file's
// cluster keys) and, with --allow-oom, why the plan does not fit: printed on
// stderr before the simulation.
void print_scenario_warnings(const scenario::Scenario& scenario, bool allow_oom);

}  // namespace trainsim::cli
