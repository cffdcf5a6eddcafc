#pragma once
// `trainsim sweep`: run every point of a study file in worker processes and
// gather the results (results.csv, results.json, plots, report.html).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct SweepOptions {
  std::string study;
  std::string out_dir;  // empty: runs/<study name>
  int jobs = 0;         // 0: one per processor
  std::string shard;    // "I/N", empty: the whole study
  std::vector<std::string> overrides;
  std::vector<std::string> only;  // --only COLUMN=V1,V2: run a subset of the study
  std::string keep = "all";
  bool html = false;
  bool quiet = false;
  bool allow_oom = false;  // simulate plans that do not fit in GPU memory too
  int slurm_shards = 0;    // --slurm N: submit N shards as a Slurm job array and a merge job
  std::vector<std::string> sbatch_arguments;  // --sbatch ARG: more sbatch options for both jobs
};

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& options);
// Returns the process exit status.
int sweep_command(const SweepOptions& options);

}  // namespace trainsim::cli
