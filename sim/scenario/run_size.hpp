#pragma once
// A size guard before anything big is built: an estimate of what a
// scenario's run will build (timeline records, network flows), the memory it
// will take and how long the replay will run, from the plan alone. `trainsim
// run` refuses a run whose estimate exceeds the memory the machine has (or
// --max-memory), saying the estimate and what to change, and says the
// estimate up front for a long run.
//
// The estimate is deliberately a small formula with a few constants
// calibrated on measured runs (docs/reliability.md "Size guard" has the
// table and the command): the replay's cost per record and per flow changes
// as the engine does, so retuning means re-measuring and editing the
// constants in run_size.cpp, nothing else. It aims at the right order of
// magnitude (within ~3x either way), which is what a guard needs.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "sim/scenario/memory_limits.hpp"
#include "sim/scenario/replica_record_count.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {

// A run whose estimated wall time exceeds this gets its estimate said up front.
constexpr double kLongRun_s = 60;

struct RunSize {
  double records = 0;  // task executions on GPUs (timeline.csv rows)
  // `records` was counted on the plan's task graph with fewer replicas
  // (replica_record_count.hpp), not taken from the formula.
  bool records_counted = false;
  double flows = 0;  // network flows
  // The run is expected to fold (docs/performance.md, "The fold"): the
  // records and flows above are written, but only one class's are held.
  bool folded = false;
  double memory_bytes = 0;
  double replay_s = 0;  // wall time of the replay and the outputs, on a 2-core machine
};

// `fold_from_gpus` (LoadOptions::fold_from_gpus): a scenario of at least
// that many GPUs that the fold's simple conditions do not rule out (no
// perturbed GPU or link, no trace workload, dp >= 2) is estimated folded. The fold
// may still be refused later (a tree collective, a fabric whose symmetries
// are not derived): the full replay then needs the unfolded estimate.
RunSize estimate_run_size(const Scenario& scenario, int iterations = 1, int fold_from_gpus = 0);
// The same for a run known to fold (the replay found the fold): its records
// and flows held per class whatever the simple conditions above predict.
// `iteration`: one iteration's records and exchange flows when the graph
// is built (replica_record_count.hpp's timeline_records and
// exchange_flows), else counted as above.
RunSize estimate_folded_run_size(const Scenario& scenario, int iterations = 1,
                                 std::optional<IterationCount> iteration = std::nullopt);

// `trainsim collective`: `sizes` collectives over `ranks` ranks, one after
// the other. Detailed fidelity moves up to 2 (ranks - 1) steps of one flow
// per rank and channel (ring all-reduce; all-to-all is ranks - 1 steps of
// ranks flows); fast fidelity one flow per edge. Automatic fidelity counts
// as detailed here, unlike in estimate_run_size: on the benchmark's idle
// cluster every collective runs isolated, which computes each step of each
// rank (a million-rank ring ran 19 minutes and 7 GB before the guard knew).
// Memory is the peak of one collective (they run back to back), time the sum.
RunSize estimate_collective_size(int ranks, std::size_t sizes, platforms::Fidelity fidelity);

// `load` with the size guard on at what this process may still take: the
// smallest of the machine's available memory, its rlimits and its cgroup's
// limit (sim/scenario/memory_limits.hpp; sweep and compare points; `run`
// also takes --max-memory).
LoadOptions with_size_guard(LoadOptions load);

// What an allocation that failed says (exit status 1, not an internal
// error): "out of memory: the run needed more than the 2GiB the process may
// use (ulimit -v); estimate: ...; make it smaller ...". `what`: "the run",
// "the collectives", "the command"; `estimate` when one was made.
std::string out_of_memory_message(std::string_view what, const RunSize* estimate);

// Throws platforms::InputError when `size.memory_bytes` exceeds
// `options.max_run_memory_bytes`, naming the estimate, the limit
// (`memory_limit_from`) and what to make smaller.
void check_run_size(const Scenario& scenario, const RunSize& size, const LoadOptions& options);
// The same for `trainsim collective --ranks N` (what to change: --ranks,
// --fidelity fast, the size range).
void check_collective_size(int ranks, const RunSize& size, const MemoryLimit& limit);

// "about 2.1e+06 records, 1.5e+07 flows, 6.3GiB, 4 min": the estimate in words.
std::string describe(const RunSize& size);

}  // namespace trainsim::scenario
