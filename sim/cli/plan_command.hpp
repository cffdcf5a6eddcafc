#pragma once
// `trainsim plan`: search the parallel plans of a model on N GPUs, estimate
// them all, simulate the best K and print them ranked, with why the winner
// wins (docs/plan_search.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct PlanOptions {
  std::string model;
  std::string cluster;
  std::string scenario;
  int gpus = 0;
  int global_batch = 0;
  int seq_len = 0;
  int top = 8;
  int jobs = 0;  // 0: one per processor
  std::string out_dir;
  std::vector<std::string> overrides;
  std::string format = "table";
  std::string fidelity = "fast";
  std::string keep = "summary";
  bool quiet = false;
  bool progress = false;  // the progress line even when stderr is not a terminal
  // --fold / --no-fold, handed to every simulated plan's `trainsim run`;
  // neither: its default (folded from 4,096 GPUs on).
  bool fold = false;
  bool no_fold = false;
};

CLI::App* add_plan_command(CLI::App& app, PlanOptions& options);
// Returns the process exit status.
int plan_command(const PlanOptions& options);

}  // namespace trainsim::cli
