#pragma once
// `trainsim collective`: nccl-tests from simulation. One collective over the
// first N GPU ranks of a cluster, at message sizes from --min to --max, as a
// table of size, time, algorithm bandwidth and bus bandwidth.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct CollectiveOptions {
  std::string cluster = "dgx-a100-hdr";
  std::string op = "all_reduce";
  int ranks = 0;  // 0: one node
  std::string min_size = "1MiB";
  std::string max_size = "1GiB";
  double step_factor = 2;
  std::string algorithm = "auto";
  std::string fidelity;  // empty: the cluster's collectives.fidelity
  std::vector<std::string> overrides;
  std::string format = "table";
  bool progress = false;  // the progress line even when stderr is not a terminal
};

CLI::App* add_collective_command(CLI::App& app, CollectiveOptions& options);
// Returns the process exit status.
int collective_command(const CollectiveOptions& options);

}  // namespace trainsim::cli
