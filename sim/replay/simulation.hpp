#pragma once
// One scenario from specs to results: build the task graph, build the SimGrid
// platform, replay, summarize. The CLI and the scenario tests call this.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "analysis/gpu_power.hpp"
#include "analysis/memory_curve.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "sim/perturbations/driver.hpp"
#include "sim/perturbations/job_failures.hpp"
#include "sim/replay/replay_observer.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::sim {

// The fold (docs/performance.md, "The fold"): `on` with `trainsim run
// --fold`, `off` with `--no-fold`; `automatic` folds clusters of at least
// kFoldByDefaultGpus GPUs and replays smaller ones whole. The threshold keeps
// every run below it (every digest case) byte for byte what it was, while
// the runs where the full replay costs tens of seconds to hours fold: there
// the fold was checked exact on scale-16k (every timeline row equal), and
// the one case known to differ (a displaced collective under `auto` with
// asynchronous pipeline sends: relative 4e-7 on the iteration time) is
// bounded in docs/performance.md.
inline constexpr int kFoldByDefaultGpus = 4096;
enum class FoldMode : unsigned char { automatic, on, off };
// The fold `--fold` / `--no-fold` ask for (neither: automatic).
inline FoldMode fold_mode(bool fold, bool no_fold) {
  return fold ? FoldMode::on : no_fold ? FoldMode::off : FoldMode::automatic;
}
// The size guard's expectation of it (scenario::LoadOptions::fold_from_gpus):
// folded at any size, never, or from kFoldByDefaultGpus GPUs on.
inline int fold_from_gpus(FoldMode mode) {
  return mode == FoldMode::on ? 1 : mode == FoldMode::off ? 0 : kFoldByDefaultGpus;
}

struct SimulationOptions {
  FoldMode fold = FoldMode::automatic;
  // Consecutive iterations replayed (`trainsim run --iterations N`).
  int iterations = 1;
  // More seeds for the job-level failure run, each run after the one of the
  // scenario's own seed on the same replayed iterations (`--seeds K` when the
  // replay does not depend on the seed: one replay instead of K). Refused
  // when it does (random stragglers).
  std::vector<std::uint64_t> more_failure_seeds;
  // Told the replay's estimated cost before it starts, and its progress.
  ReplayObserver observer;
};

struct SimulationResult {
  workloads::TaskGraph graph;
  // The first iteration (what the reports describe).
  analysis::Timeline timeline;
  analysis::Summary summary;
  // Computed with the summary, for the report (analysis::ComputedWithSummary).
  analysis::MemoryCurves memory_curves;
  std::vector<analysis::GpuActivity> gpu_activity;
  std::vector<std::vector<analysis::Interval>> nccl_waits;  // the representatives' (gpu_activity)
  // Every replayed iteration's duration, in order.
  std::vector<double> iteration_times_s;
  PerturbationStats perturbations;
  // With a `perturbations.failures` section: the job-level run.
  std::optional<JobFailureResult> failures;
  // The job-level runs of `options.more_failure_seeds`, in order.
  std::vector<JobFailureResult> more_failures;
};

// The task graph of one iteration of `scenario` (deterministic: the same
// scenario always gives the same graph). Needs no SimGrid engine.
workloads::TaskGraph build_task_graph(const scenario::Scenario& scenario);

// Runs `options.iterations` simulated iterations of `scenario`. One call per
// process.
SimulationResult simulate(const scenario::Scenario& scenario, const SimulationOptions& options = {});

}  // namespace trainsim::sim
