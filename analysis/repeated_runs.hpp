#pragma once
// What a run adds to its summary when it is more than one replayed
// iteration of one seed: `trainsim run --iterations N`, `--seeds K`, a
// `perturbations` section, a `failures` section. The replay and the
// job-level failure run record these typed outcomes; summary.json writes them
// as its "iterations", "perturbations", "failures" and "seeds" blocks, the
// terminal summary as its last lines, and run.trainsim keeps them so that
// `trainsim report` writes them again (README "Perturbations",
// docs/perturbations.md).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace trainsim::analysis {

// What the perturbations did during the replay.
struct PerturbationStats {
  int straggler_episodes = 0;
  double straggler_gpu_seconds = 0;  // episode time inside the replay, over GPUs
  std::vector<int> episodes_per_iteration{};
  int link_changes = 0;
  int stalled_flows = 0;
  double longest_stall_s = 0;
  int rerouted_downs = 0;
};

// The scenario's perturbation rules, counted, and what they did.
struct PerturbationOutcome {
  std::size_t slow_gpu_rules = 0;
  std::size_t throttling_rules = 0;
  bool stragglers = false;
  std::size_t link_faults = 0;
  PerturbationStats stats{};
};

// The job-level run with failures, restarts and checkpoints.
struct JobFailureOutcome {
  double run_time_s = 0;
  int failures = 0;
  int checkpoints = 0;
  long long useful_iterations = 0;  // completed and kept at the end
  long long lost_iterations = 0;    // completed, then lost to a failure
  double checkpoint_write_s = 0;    // one checkpoint
  double checkpoint_bytes = 0;
  // The run's wall clock, split: these five add up to run_time_s.
  double useful_s = 0;      // iterations that were kept
  double lost_work_s = 0;   // iterations (and partial ones) lost to failures
  double restart_s = 0;     // restart delays
  double checkpoint_s = 0;  // checkpoint writes (including interrupted ones)
  double unfinished_s = 0;  // the iteration the end of the run cut short
  double tokens_per_iteration = 0;
  double goodput_tokens_per_hour = 0;
  double ideal_tokens_per_hour = 0;  // no failures, no checkpoints
};

// One seed's figures (`--seeds K`).
struct SeedOutcome {
  std::uint64_t seed = 0;
  std::vector<double> iteration_times_s;
  std::optional<JobFailureOutcome> failures{};  // with a failures section
};

struct RepeatedRuns {
  std::uint64_t seed = 0;                   // the scenario's own seed
  std::vector<double> iteration_times_s{};  // every replayed iteration, in order
  std::optional<PerturbationOutcome> perturbations{};
  std::optional<JobFailureOutcome> failures{};
  std::vector<SeedOutcome> seeds{};  // with --seeds K > 1: every seed, the scenario's first
  // The task graph draws from the seed (MoE routing drawn with the
  // scenario's seed): each seed replays other loads.
  bool graph_depends_on_seed = false;
};

// summary.json's blocks, in this order: "iterations", then "perturbations",
// "failures" and "seeds" when there are any.
nlohmann::ordered_json summary_blocks(const RepeatedRuns& runs);

// Every field, for run.trainsim and for a seed's child process; the
// readers throw nlohmann::json::exception on a malformed object.
nlohmann::ordered_json to_json(const JobFailureOutcome& outcome);
JobFailureOutcome job_failure_outcome_from_json(const nlohmann::json& j);
nlohmann::ordered_json to_json(const RepeatedRuns& runs);
RepeatedRuns repeated_runs_from_json(const nlohmann::json& j);

}  // namespace trainsim::analysis
