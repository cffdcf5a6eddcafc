#pragma once
// Does the plan fit in GPU memory? The static estimate of the memory model
// (workloads/memory_model.hpp: each pipeline rank's op list walked in
// order), checked against every GPU's HBM before anything is simulated.
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "workloads/memory_model.hpp"

namespace trainsim::scenario {

// The estimate for the scenario's plan and schedule, for a pipeline running
// `micro_batches` micro-batches (0: plan.micro_batches(), the most any
// data-parallel replica runs).
workloads::MemoryEstimate estimate_scenario_memory(const Scenario& scenario, int micro_batches = 0);

// Empty when the plan fits; otherwise one message: the first pipeline stage
// whose peak exceeds the memory of one of its GPUs (the smallest, on a mixed
// cluster), naming that GPU (rank, stage, node), the peak, the capacity and
// the breakdown, then the other stages that do not fit. The
// message carries no file location and no remedy beyond the plan's (the
// loader adds both: `--allow-oom` when it refuses).
std::vector<std::string> memory_problems(const Scenario& scenario);

// The pipeline ranks whose peak exceeds the memory of one of their GPUs (any
// replica's share), in rank order; empty when the plan fits. What `run
// --balance auto` caps.
std::vector<int> ranks_out_of_memory(const Scenario& scenario);

}  // namespace trainsim::scenario
