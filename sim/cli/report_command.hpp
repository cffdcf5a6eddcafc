#pragma once
// `trainsim report RUN_DIR`: regenerate every output of a saved run (and,
// with --html, one self-contained HTML page) without simulating again. Also
// what `trainsim run` calls to save the run and write its outputs, so both
// commands write exactly the same files.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/balance_outcome.hpp"
#include "analysis/timeline.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::cli {

struct ReportOptions {
  std::string run_dir;
  std::string out_dir;  // empty: RUN_DIR
  bool html = false;
  bool quiet = false;
};

// Registers the subcommand; `options` must outlive parsing.
CLI::App* add_report_command(CLI::App& app, ReportOptions& options);
// Returns the process exit status.
int report_command(const ReportOptions& options);

// Saves what `report` needs into `dir` (analysis/reporters/run_archive.hpp): the
// scenario text and overrides, the task graph and the timeline (and what
// `run --balance auto` found, when given).
void save_run(const std::filesystem::path& dir, const scenario::Scenario& scenario,
              const std::string& scenario_text, const std::vector<std::string>& overrides,
              const workloads::TaskGraph& graph, const analysis::Timeline& timeline,
              const analysis::BalanceOutcome* balance = nullptr);
// Analyses the run, writes every output file into `dir`, prints the terminal
// summary and the files written (plus `also_written`) unless `quiet`.
void write_reports(const std::filesystem::path& dir, const scenario::Scenario& scenario,
                   const workloads::TaskGraph& graph, const analysis::Timeline& timeline, bool html,
                   bool quiet, const std::vector<std::string>& also_written = {},
                   const analysis::BalanceOutcome* balance = nullptr);

}  // namespace trainsim::cli
