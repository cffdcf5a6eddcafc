#pragma once
// A training job over hours to weeks, with failures, restarts and
// checkpoints, as a job-level event simulation on SimGrid timers: replaying
// every iteration of a 24-hour job on 16,384 GPUs is out of reach, so the
// iterations take the times of the replayed ones (cycled in order), while
// failures, restart delays, checkpoint writes and iteration ends are events
// on SimGrid's clock.
//
//   run:  iter iter iter [ckpt] iter iter X(fail) [restart delay] iter ...
//                                 ^ last checkpoint: the iterations after it
//                                   are lost and replayed after the restart
//
// Failure times: the given `at` times, plus draws from exponential laws of
// mean gpu_mtbf / GPUs and node_mtbf / nodes (explicit inverse-CDF code on
// std::mt19937_64, seeded). A failure during a restart starts the restart
// again; one during a checkpoint write loses that checkpoint.
#include <cstdint>
#include <vector>

#include "analysis/repeated_runs.hpp"
#include "sim/scenario/perturbations.hpp"

namespace trainsim::sim {

// The typed record (analysis/repeated_runs.hpp), written by the reporters.
using JobFailureResult = analysis::JobFailureOutcome;

// Runs the job on the current SimGrid engine (after the replay), from its
// current clock. `iteration_times_s` must not be empty.
JobFailureResult simulate_job_failures(const scenario::Failures& failures,
                                       const std::vector<double>& iteration_times_s,
                                       double tokens_per_iteration, double parameters, int gpus, int nodes,
                                       std::uint64_t seed);

}  // namespace trainsim::sim
