#pragma once
// `trainsim sweep STUDY --slurm N`: a study as a Slurm job array of N
// `trainsim sweep --shard I/N` tasks and a merge job that runs after them.
//
//   OUT/slurm/shard.sbatch   the array job: task I runs shard I/N into OUT/shards/shard-I
//   OUT/slurm/merge.sbatch   `trainsim merge OUT/shards/shard-* --out OUT` (afterany: the array)
//   OUT/slurm/*.log          each task's and the merge's output
//
// Both scripts are written before anything is submitted, so they can be
// read, and resubmitted by hand (`sbatch --array=7 OUT/slurm/shard.sbatch`
// reruns one shard, which resumes its finished points).
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim::sim {

struct SlurmSweep {
  std::string trainsim_exe;           // the binary every job runs (on a shared file system)
  std::string study;                  // the study file, as the user gave it
  std::string study_name;             // for the job names
  std::filesystem::path out_dir;      // as the user gave it (relative to working_dir)
  std::filesystem::path working_dir;  // the jobs run here (`--chdir`): where sweep was called
  int shards = 1;
  // Arguments every shard's `trainsim sweep` gets besides the study, --shard
  // and --out (--set, --only, --keep, --allow-oom, -j).
  std::vector<std::string> sweep_arguments;
  // No -j given: each shard runs one worker per CPU Slurm gave its task.
  bool jobs_from_slurm = true;
  bool html = false;  // the merge job also writes report.html
  // Extra sbatch options for both jobs (`--sbatch=--partition=gpu`).
  std::vector<std::string> sbatch_arguments;
  std::string sbatch = "sbatch";  // the program that submits (tests put a stand-in here)
};

struct SlurmScripts {
  std::string shard_script;
  std::string merge_script;
};

// The two batch scripts (pure: no file is written).
SlurmScripts slurm_scripts(const SlurmSweep& sweep);

// Where the shards of a Slurm sweep write: OUT/shards/shard-I.
std::filesystem::path slurm_shard_dir(const std::filesystem::path& out_dir, int shard);

struct SlurmJobs {
  std::string array_job;  // Slurm's job ids, as `sbatch --parsable` printed them
  std::string merge_job;
};

// Writes the scripts into OUT/slurm/ and submits them: the array first, then
// the merge job depending on it (afterany: merge decides whether every shard
// finished, and says which did not). Throws InputError when sbatch is
// missing or refuses a job (with what it printed).
SlurmJobs submit_slurm_sweep(const SlurmSweep& sweep);

// `word` quoted for a POSIX shell (single quotes, nothing expands inside).
std::string shell_quote(const std::string& word);

}  // namespace trainsim::sim
