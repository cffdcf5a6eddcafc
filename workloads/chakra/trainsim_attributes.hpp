#pragma once
// trainsim's own node attributes in the Chakra traces it exports: every task
// field Chakra has no place for, so that importing an exported trace gives
// back the very task graph (identical timelines). Other Chakra tools ignore
// attributes they do not know; `import_trace` reads them unless told not to.
#include <optional>
#include <string_view>

#include "platforms/collective_config.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::chakra::attribute {

inline constexpr std::string_view task = "trainsim.task";                // uint64: the task's id
inline constexpr std::string_view kind = "trainsim.kind";                // TaskKind
inline constexpr std::string_view comm = "trainsim.comm";                // CommKind
inline constexpr std::string_view op = "trainsim.op";                    // CollectiveOp
inline constexpr std::string_view transfer = "trainsim.transfer";        // TransferKind
inline constexpr std::string_view algorithm = "trainsim.algorithm";      // CollectiveAlgorithm asked for
inline constexpr std::string_view stage = "trainsim.stage";              // int64
inline constexpr std::string_view chunk = "trainsim.chunk";              // int64
inline constexpr std::string_view micro_batch = "trainsim.micro_batch";  // int64
inline constexpr std::string_view layer = "trainsim.layer";              // int64
inline constexpr std::string_view fold = "trainsim.fold";                // int64
inline constexpr std::string_view attention = "trainsim.attention";      // bool
inline constexpr std::string_view duration_s = "trainsim.duration_s";    // double, exact
inline constexpr std::string_view model_flops = "trainsim.model_flops";  // double
inline constexpr std::string_view hardware_flops = "trainsim.hardware_flops";  // double
inline constexpr std::string_view bytes = "trainsim.bytes";                    // double, exact
// string: the task's name in a trace trainsim imported (its label).
inline constexpr std::string_view label = "trainsim.label";
// int64 list, one per data dependency: the edge's position in the graph's
// edge list, so the imported graph adds its edges in the same order (the
// replay releases a task's successors in that order).
inline constexpr std::string_view dep_edges = "trainsim.dep_edges";
// bool: a zero-byte send / receive pair that only carries a dependency
// between tasks with no rank in common (Chakra dependencies stay within a
// rank's file); the import turns it back into an edge.
inline constexpr std::string_view dependency_only = "trainsim.dependency_only";

}  // namespace trainsim::chakra::attribute

namespace trainsim::chakra {

// The enum value whose to_string is `text`, among the first `count` values.
template <class E>
std::optional<E> enum_from_string(std::string_view text, int count) {
  for (int i = 0; i < count; ++i)
    if (to_string(static_cast<E>(i)) == text)
      return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace trainsim::chakra
