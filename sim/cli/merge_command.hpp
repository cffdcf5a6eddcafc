#pragma once
// `trainsim merge`: combine the shards of one study (`trainsim sweep
// --shard I/N`, for example one per Slurm array task) into the results one
// unsharded run would have written, byte for byte.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct MergeOptions {
  std::vector<std::string> shard_dirs;
  std::string out_dir;
  bool html = false;
};

CLI::App* add_merge_command(CLI::App& app, MergeOptions& options);
// Returns the process exit status.
int merge_command(const MergeOptions& options);

}  // namespace trainsim::cli
