#pragma once
// A 64-bit fingerprint of everything a task graph holds (tasks with every
// field, dependencies, groups, memory), so a saved run can be checked
// against the graph rebuilt from its scenario instead of storing the graph.
#include <cstdint>

#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

// FNV-1a over the graph's contents (doubles by bit pattern): equal graphs
// give equal fingerprints on every platform of the same endianness.
std::uint64_t graph_fingerprint(const TaskGraph& graph);

}  // namespace trainsim::workloads
