#pragma once
// A trainsim task graph as a Chakra execution trace, one file per GPU rank,
// for ASTRA-sim and the other tools that read Chakra:
//
//   compute task            -> COMP_NODE on its GPU: duration_micros (rounded), num_ops
//   send task s -> d        -> COMM_SEND_NODE on s and COMM_RECV_NODE on d (comm_src,
//                              comm_dst, comm_tag = the task's id, comm_size bytes)
//   collective over a group -> COMM_COLL_NODE on every rank of the group: comm_type,
//                              comm_size (nccl-tests' size: each rank's buffer), pg_name
//                              = the group's id in the comm groups file
//   edge p -> t             -> a data dependency on a rank where both have a node; when
//                              they share none, a zero-byte send / receive pair carries it
//
// Nodes are written in a topological order of the graph, so every rank
// issues the collectives of a group in the same order. Every node also
// carries trainsim's own attributes (workloads/chakra/trainsim_attributes.hpp),
// from which `import_trace` rebuilds the very same graph. Memory events are
// not exported.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/chakra/et_trace.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::chakra {

struct ExportedTrace {
  std::vector<Trace> ranks;                     // one per GPU rank
  std::map<int, std::vector<int>> comm_groups;  // pg_name (group index + 1) -> ranks, in ring order
  std::size_t dependency_pairs = 0;             // zero-byte send / receive pairs added for dependencies
};

// `producer` goes into each file's metadata ("trainsim 0.1.0"). Throws
// platforms::InputError for a task Chakra cannot express (a send_recv ring
// collective of `trainsim collective`).
ExportedTrace export_trace(const workloads::TaskGraph& graph, std::string_view producer);

// Writes one file: `write` puts its bytes on the stream. `trainsim export`
// passes the atomic writer (analysis/reporters/atomic_file.hpp), which this
// layer cannot include.
using FileWriter =
    std::function<void(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write)>;

// Writes DIR/NAME.<rank>.et for every rank and DIR/NAME.comm_groups.json
// (ASTRA-sim's --comm-group-configuration), each through `write_file`;
// returns the paths written.
std::vector<std::filesystem::path> write_trace(const std::filesystem::path& dir, const std::string& name,
                                               const ExportedTrace& trace, const FileWriter& write_file);

}  // namespace trainsim::chakra
