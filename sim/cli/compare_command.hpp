#pragma once
// `trainsim compare`: simulate variants side by side (scenario files, and the
// `variants` sections of study files) and print their figures with the ratio
// to the first.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct CompareOptions {
  std::vector<std::string> files;
  std::string out_dir;  // empty: runs/compare
  int jobs = 0;         // 0: one per processor
  std::vector<std::string> overrides;
  bool quiet = false;
  bool allow_oom = false;  // simulate plans that do not fit in GPU memory too
};

CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);
// Returns the process exit status.
int compare_command(const CompareOptions& options);

}  // namespace trainsim::cli
