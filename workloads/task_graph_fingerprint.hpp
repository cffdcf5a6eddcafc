#pragma once
// A 64-bit fingerprint of everything a task graph holds (tasks with every
// field, dependencies, groups, memory), so a saved run can be checked
// against the graph rebuilt from its scenario instead of storing the graph.
#include <cstdint>

#include "workloads/task_graph.hpp"

namespace trainsim::workloads {

// How the fingerprint hashes the graph: FNV-1a byte by byte over most of a
// task's fields one by one (what run.trainsim versions 6 to 9 store;
// copy_engine and memory_bound_fraction unread), or one multiplication and
// rotation per 8-byte value over every field of a task packed into 12
// values (version 10: ~5x fewer instructions). Groups, exchanges,
// dependencies and memory events are read alike by both.
enum class FingerprintHash : std::uint8_t { fnv1a, multiply_rotate };

// A hash of the graph's contents (doubles by bit pattern): equal graphs
// give equal fingerprints on every platform of the same endianness.
std::uint64_t graph_fingerprint(const TaskGraph& graph, FingerprintHash hash = FingerprintHash::fnv1a);

// One value's step of it: `hash` after FNV-1a over the 8 bytes of `bits`,
// lowest first. A zero byte leaves nothing to xor, so a run of them is one
// multiplication by the prime's power (mod 2^64, what the byte loop
// computes): most of a graph's values are small integers; -1 (an unset
// field) is one multiplication and a table's term; a value below 2^24 (an
// id) three steps and one multiplication.
std::uint64_t fnv1a_add(std::uint64_t hash, std::uint64_t bits);

// FingerprintHash::multiply_rotate's step: `hash` after the value `bits`,
// a bijection of `hash` for any `bits` and of `bits` for any `hash`.
std::uint64_t multiply_rotate(std::uint64_t hash, std::uint64_t bits);

}  // namespace trainsim::workloads
