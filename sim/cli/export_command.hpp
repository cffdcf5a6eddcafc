#pragma once
// `trainsim export SCENARIO --chakra DIR`: a scenario's task graph (one
// training iteration) as a Chakra execution trace, one file per GPU rank, so
// ASTRA-sim and other Chakra tools can replay the same workload, plus a
// scenario that replays the trace on the same cluster with trainsim.
// `--kineto DIR`: the simulated iteration as PyTorch profiler traces
// (sim/cli/kineto_export.hpp).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct ExportOptions {
  std::string scenario;
  std::string chakra_dir;  // --chakra DIR
  std::string kineto_dir;  // --kineto DIR: the simulated iteration as PyTorch profiler traces
  std::string name;        // file prefix; empty: the scenario's name
  std::vector<std::string> overrides;
  bool allow_oom = false;
};

// Registers the subcommand; `options` must outlive parsing.
CLI::App* add_export_command(CLI::App& app, ExportOptions& options);
// Returns the process exit status.
int export_command(const ExportOptions& options);

}  // namespace trainsim::cli
