#pragma once
// The task graph of a scenario that replays a Chakra trace (the `workload`
// section): every rank's file read and imported (workloads/chakra), compute
// nodes given in FLOPs timed on the rank's GPU.
#include "sim/scenario/scenario.hpp"
#include "workloads/chakra/trace_import.hpp"

namespace trainsim::scenario {

// Throws platforms::InputError for a trace that cannot be read or imported.
chakra::ImportedTrace import_trace_workload(const Scenario& scenario);

}  // namespace trainsim::scenario
