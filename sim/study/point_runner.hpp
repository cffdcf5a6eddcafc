#pragma once
// Runs study points, each in its own `trainsim run` child process (SimGrid
// runs one simulation per process), N at a time, each in its own folder:
//
//   ROOT/<id>/scenario.yaml   the resolved scenario (runs alone with `trainsim run`)
//   ROOT/<id>/summary.json    ...and the other outputs of `trainsim run`
//   ROOT/<id>/run.log         what the child printed
//
// A point runs in ROOT/<id>.partial and the folder is renamed to ROOT/<id>
// only once it is complete, so a point is finished exactly when ROOT/<id>/
// summary.json exists: an interrupted study resumes without redoing finished
// points (those whose scenario.yaml is unchanged) and never trusts a half
// written one. Failed points keep their folder (run.log says why) without a
// summary.json, so they run again on resume.
#include <filesystem>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/study/progress.hpp"

namespace trainsim::sim {

struct PointJob {
  std::string id;     // folder name under the root
  std::string label;  // shown in progress lines
  std::string scenario_yaml;
};

enum class PointState { simulated, reused, failed };

struct PointOutcome {
  PointState state = PointState::failed;
  nlohmann::ordered_json summary;  // summary.json, unless failed
  int exit_status = 0;             // the child's exit status; 128 + N when killed by signal N
  std::string error;               // the child's error messages, when failed
  double wall_s = 0;
};

// Which outputs of a point to keep: everything `trainsim run` writes, or
// only summary.json (with scenario.yaml and run.log; for big studies, where
// traces, tables and archives would fill the disk).
enum class KeepOutputs { all, summary };

struct RunnerOptions {
  std::filesystem::path root;
  int jobs = 1;
  // Reuse finished points whose scenario.yaml is unchanged; false: always
  // simulate again (and replace the folder).
  bool resume = true;
  KeepOutputs keep = KeepOutputs::all;
  std::string trainsim_exe;  // the binary each point runs with (current_executable())
  // More arguments for each point's `trainsim run` (e.g. --allow-oom).
  std::vector<std::string> run_arguments;
  ProgressStyle progress = ProgressStyle::lines;
};

// Thrown after an interruption (SIGINT, SIGTERM, SIGHUP, SIGPIPE): running
// children were sent the same signal and reaped, finished points kept,
// partial folders removed. The command says so in the policy's one line
// (platforms::interruption_message) and exits 128 + the signal.
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, std::size_t finished, std::size_t total);
  int signal() const { return signal_; }
  std::size_t finished() const { return finished_; }
  std::size_t total() const { return total_; }

 private:
  int signal_;
  std::size_t finished_;
  std::size_t total_;
};

// How many points of `jobs` are finished in `root` (what resume would reuse).
std::size_t count_finished(const std::vector<PointJob>& jobs, const std::filesystem::path& root);

// Runs every job (or reuses it) and returns one outcome per job, in order.
std::vector<PointOutcome> run_points(const std::vector<PointJob>& jobs, const RunnerOptions& options,
                                     std::ostream& log);

// This program's own binary (/proc/self/exe), for the children.
std::string current_executable();

}  // namespace trainsim::sim
