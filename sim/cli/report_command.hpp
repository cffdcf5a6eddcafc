#pragma once
// `trainsim report RUN_DIR`: regenerate every output of a saved run (and,
// with --html, one self-contained HTML page) without simulating again. Also
// what `trainsim run` calls to save the run and write its outputs, so both
// commands write exactly the same files.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analysis/balance_outcome.hpp"
#include "analysis/repeated_runs.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "analysis/reporters/run_folder.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::cli {

struct ReportOptions {
  std::string run_dir;
  std::string out_dir;  // empty: RUN_DIR
  bool html = false;
  bool quiet = false;
  std::string trace = "auto";  // --trace auto|full|replica
};

// Registers the subcommand; `options` must outlive parsing.
CLI::App* add_report_command(CLI::App& app, ReportOptions& options);
// Returns the process exit status.
int report_command(const ReportOptions& options);

// One run's records, as `run`, `run --balance auto` and `report` hand them
// to the run-outputs step (analysis/reporters/run_outputs.hpp).
struct RunToWrite {
  const scenario::Scenario& scenario;
  const workloads::TaskGraph& graph;
  const analysis::Timeline& timeline;
  const analysis::Summary* summary = nullptr;   // the replay's, when it has one
  analysis::ComputedWithSummary computed{};     // what the replay computed with it
  const analysis::FoldSummary* fold = nullptr;  // without it: the archive's, when the fold was considered
  std::optional<analysis::RepeatedRuns> repeats{};
  const analysis::BalanceOutcome* balance = nullptr;
  // run.trainsim to write (null: `report` keeps the one it read, when it
  // writes into the run's own folder: `keep_archive`).
  const analysis::RunMetadata* archive = nullptr;
  bool keep_archive = false;
  std::vector<std::string> kept_folders{};
  analysis::TraceDetail trace = analysis::TraceDetail::automatic;
};
// --trace auto|full|replica, as `run` and `report` take it.
void add_trace_option(CLI::App& command, std::string& trace);
analysis::TraceDetail trace_detail(const std::string& trace);
// Writes every output file into `folder` and completes it; prints the
// terminal summary, the files written and the repeated runs' lines unless
// `quiet`.
void write_run(analysis::RunFolder& folder, const RunToWrite& run, bool html, bool quiet);

}  // namespace trainsim::cli
