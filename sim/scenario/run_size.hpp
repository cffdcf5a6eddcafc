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
#include <string>

#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {

struct RunSize {
  double records = 0;  // task executions on GPUs (timeline.csv rows)
  double flows = 0;    // network flows
  double memory_bytes = 0;
  double replay_s = 0;  // wall time of the replay and the outputs, on a 2-core machine
};

RunSize estimate_run_size(const Scenario& scenario, int iterations = 1);

// MemAvailable of /proc/meminfo (0 when unknown).
double available_memory_bytes();

// Throws platforms::InputError when `size.memory_bytes` exceeds
// `limit_bytes` (`limit_from`: "--max-memory 8GiB", "available memory"),
// naming the estimate and what to make smaller.
void check_run_size(const Scenario& scenario, const RunSize& size, double limit_bytes,
                    const std::string& limit_from);

// "about 2.1e+06 records, 1.5e+07 flows, 6.3GiB, 4 min": the estimate in words.
std::string describe(const RunSize& size);

}  // namespace trainsim::scenario
