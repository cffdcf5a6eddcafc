#pragma once
// `trainsim run --balance auto`: search a layer partition (and DP micro-batch
// shares) that equalises the stages' compute on the scenario's GPUs
// (workloads/planning/stage_balance.hpp), then simulate both the even split (in a
// child process, into RUN_DIR/even/) and the balanced one (the run's own
// outputs), and report the gain (terminal, summary.json `balance`).
#include "sim/cli/run_command.hpp"

namespace trainsim::cli {

// Returns the process exit status.
int run_balanced(const RunOptions& options);

}  // namespace trainsim::cli
