#pragma once
// A Chakra execution trace (one file per rank) as a trainsim task graph, so a
// workload recorded or generated elsewhere replays on a trainsim cluster.
//
//   COMP_NODE              -> a compute task on the rank's GPU (TaskKind::compute):
//                             duration_micros, or num_ops FLOPs and tensor_size bytes
//                             timed on the GPU (max of the two, like ASTRA-sim's roofline)
//   COMM_COLL_NODE         -> one collective task over the process group: the k-th
//                             collective of a group on each of its ranks is the same
//                             collective (NCCL issue order); comm_type, comm_size bytes
//   COMM_SEND / COMM_RECV  -> one send task: the k-th send from s to d with a tag
//                             pairs with the k-th receive on d from s with that tag
//   data_deps + ctrl_deps  -> dependency edges (both kinds: a node starts after all)
//   CPU ops, MEM_LOAD / MEM_STORE, METADATA, INVALID nodes are not simulated: their
//   dependencies pass through them
//
// Process groups: a collective's `pg_name` names one of the communicator
// groups (ASTRA-sim's comm group file: {"1": [0, 1, 2, 3], ...}); an empty
// pg_name or "0" is every rank. Collectives run on the dp stream and are
// reported as dp communication, send / recv on the pp stream. Traces that
// trainsim exported (workloads/chakra/trace_export.hpp) carry trainsim's own
// attributes (`trainsim.*`), from which every task field is restored exactly.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "workloads/chakra/et_trace.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::chakra {

struct RankTrace {
  std::string file;  // for messages
  Trace trace;
};

struct ImportOptions {
  // pg_name -> GPU ranks, in ring order.
  std::map<std::string, std::vector<int>> comm_groups;
  // Per rank, to time compute nodes that give FLOPs and bytes instead of a
  // duration. Empty: such nodes are an error.
  struct Rates {
    double flops_per_s = 0;
    double bytes_per_s = 0;
  };
  std::vector<Rates> rates;
  // Restore tasks from the `trainsim.*` attributes when present; false:
  // read only Chakra's own fields, as ASTRA-sim does.
  bool trainsim_attributes = true;
};

struct ImportStats {
  std::size_t nodes = 0;
  std::size_t compute = 0;      // compute nodes simulated
  std::size_t collectives = 0;  // collective nodes (one per rank and collective)
  std::size_t sends = 0;
  std::size_t recvs = 0;
  std::size_t skipped = 0;  // CPU ops, memory, metadata and invalid nodes
};

struct ImportedTrace {
  workloads::TaskGraph graph;
  ImportStats stats;
};

// Throws platforms::InputError naming the file, the node (id and name) and
// what is wrong: a dependency on a node the file does not have, a
// collective or send without its partners, partners that disagree, an
// unknown process group, a cycle.
ImportedTrace import_trace(const std::vector<RankTrace>& ranks, const ImportOptions& options);

// ASTRA-sim's communicator group file: {"<id>": [ranks...], ...}. Throws
// platforms::InputError.
std::map<std::string, std::vector<int>> read_comm_groups(const std::string& path);

}  // namespace trainsim::chakra
