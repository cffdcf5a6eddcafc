#pragma once
// One training iteration as a directed acyclic graph of tasks (Boost.Graph):
// compute on one GPU, point-to-point transfers, and collectives over a group
// of GPUs. Edges are dependencies: a task starts when all its predecessors
// have finished. The graph holds no SimGrid objects: sim/ replays it,
// analysis/ reads it back next to the timeline.
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "platforms/collective_config.hpp"

namespace trainsim::workloads {

enum class TaskKind : std::uint8_t {
  forward,
  backward,
  backward_input,
  backward_weight,
  optimizer,
  send,        // point-to-point transfer from `gpu` to `peer`
  collective,  // over the GPUs of `group`
  // A compute op of an imported trace (workloads/chakra), which says how
  // long it runs but not which pass of which layer it is.
  compute,
};
std::string_view to_string(TaskKind kind);
inline bool is_compute(TaskKind kind) {
  return kind != TaskKind::send && kind != TaskKind::collective;
}

// Which parallelism a transfer serves; selects the GPU stream it runs on and
// how its exposed time is reported. `ep`: expert parallelism's all-to-all
// dispatch and combine.
enum class CommKind : std::uint8_t { none, tp, pp, dp, cp, ep };
std::string_view to_string(CommKind kind);

// The collective operations NCCL offers. broadcast: from the group's first
// GPU. send_recv: every rank sends S bytes to the next one in the group
// (nccl-tests' sendrecv, a ring shift of point-to-point transfers).
enum class CollectiveOp : std::uint8_t {
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  all_to_all,
  send_recv
};
std::string_view to_string(CollectiveOp op);

// What a point-to-point transfer carries: a pipeline activation or gradient,
// or BPipe's stored activations moving to the acceptor stage (evict) and
// back before their backward (reload).
enum class TransferKind : std::uint8_t { none, activation, gradient, evict, reload };
std::string_view to_string(TransferKind kind);

using TaskId = std::size_t;

// Fields are ordered for the least padding their 98 bytes allow (104 bytes;
// 112 in declaration order by meaning): a run holds the whole machine's
// tasks (docs/performance.md, "Where the folded run's memory goes").
// Designated initializers follow this order.
struct Task {
  TaskKind kind = TaskKind::forward;
  CommKind comm = CommKind::none;
  CollectiveOp op = CollectiveOp::all_reduce;
  TransferKind transfer = TransferKind::none;  // send: what it carries
  int gpu = -1;                                // compute: the GPU; send: the sender
  int peer = -1;                               // send: the receiver
  int group = -1;                              // collective: index into TaskGraph::groups
  int stage = -1;                              // pipeline rank of the GPU(s) (a send: of the sender)
  int chunk = 0;                               // model chunk on that rank (virtual stages)
  int micro_batch = -1;
  // Collective: an uneven exchange (an all-to-all under imbalanced expert
  // routing): index into TaskGraph::exchanges; -1: every member sends every
  // other the same share of `bytes`.
  int exchange = -1;
  // Compute: time at the GPU's nominal speed, and the share of it spent in
  // HBM-bound kernels (what the power model reads).
  double duration_s = 0;
  double memory_bound_fraction = 0;
  // Compute: model FLOPs (what MFU counts) and hardware FLOPs (adds
  // recomputation; what HFU counts).
  double model_flops = 0;
  double hardware_flops = 0;
  // send: payload; collective: the buffer size nccl-tests calls "size" (S
  // in the ring formulas): each rank's input for all-reduce, reduce-scatter,
  // broadcast and all-to-all, each rank's output for all-gather.
  double bytes = 0;
  // Compute: the part of duration_s that imbalanced expert routing adds on
  // this GPU (negative where its experts get less than the balanced share;
  // workloads/expert_routing.hpp). What the bubble analysis blames on
  // expert imbalance.
  double imbalance_s = 0;
  // collective: the algorithm asked for; `automatic` defers to the cluster's
  // collectives.algorithm, and that one's `auto` to NCCL-style tuning. The
  // one actually used is recorded in the timeline.
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::automatic;
  // Compute split into pieces (FSDP units, gradient buckets, ring
  // attention): whether it is the attention core that overlaps the
  // context-parallel key/value exchange (its layer: `layer` below).
  bool attention = false;
  // collective: this many identical back-to-back collectives folded into one
  // (a stage's per-layer TP all-reduces); replayed as one pass carrying
  // `fold` times the bytes plus fold - 1 extra latency terms.
  int fold = 1;
  // Compute split into pieces: the model layer this piece runs (-1: the
  // whole op).
  int layer = -1;
  // This task's memory events: TaskGraph::memory[memory_begin, memory_end).
  std::uint32_t memory_begin = 0;
  std::uint32_t memory_end = 0;
};
static_assert(sizeof(Task) == 104, "Task changed size: order its fields for the least padding, then update");

// What a GPU's memory holds, by kind (workloads/memory_model.hpp says what
// each kind counts).
enum class MemoryKind : std::uint8_t { weights, gradients, optimizer, activations, buffers };
inline constexpr int kMemoryKindCount = 5;
std::string_view to_string(MemoryKind kind);

struct MemoryBreakdown {
  double bytes[kMemoryKindCount] = {};
  double& operator[](MemoryKind kind) { return bytes[static_cast<int>(kind)]; }
  double operator[](MemoryKind kind) const { return bytes[static_cast<int>(kind)]; }
  double total() const;
  MemoryBreakdown& operator+=(const MemoryBreakdown& other);
};

// A change of one GPU's memory when a task starts or ends: positive bytes
// allocate, negative free.
struct MemoryEvent {
  enum class At : std::uint8_t { start, end };
  TaskId task = 0;
  int gpu = -1;
  At at = At::start;
  MemoryKind kind = MemoryKind::activations;
  double bytes = 0;
};

using GraphStorage = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Task>;

// Boost 1.74's adjacency_list (Debian 12) has no move constructor or move
// assignment, and its swap() makes three deep copies: every std::move of a
// TaskGraph copied every vertex and edge (twice per run; at 16,384 GPUs
// millions of allocations). A move here swaps the storage: the vertex vector,
// the edge list (std::list: the out- and in-edge iterators into it stay
// valid) and the graph property. Those are public members of Boost's
// implementation (marked "would be protected"); a Boost that renames them
// fails to compile here rather than misbehave.
struct Graph : GraphStorage {
  Graph() = default;
  Graph(const Graph&) = default;
  Graph& operator=(const Graph&) = default;
  Graph(Graph&& other) noexcept { take(other); }
  Graph& operator=(Graph&& other) noexcept {
    take(other);
    return *this;
  }
  ~Graph() = default;

 private:
  void take(Graph& other) noexcept {
    m_vertices.swap(other.m_vertices);
    m_edges.swap(other.m_edges);
    m_property.swap(other.m_property);
  }
};
static_assert(std::is_same_v<Graph::vertex_descriptor, TaskId>);

// An exchange whose bytes are not `bytes` spread evenly (Task::exchange):
// an all-to-all under imbalanced expert routing, or a DeepEP dispatch.
struct Exchange {
  // The bytes each member of the group sends to each member over all the
  // task's folded passes, row-major in group order (sender i, receiver j at
  // i x n + j; the diagonal stays 0): what a pairwise all-to-all moves.
  std::vector<double> send_bytes;
  // A hierarchical (DeepEP) exchange's end-to-end bytes apart by direction,
  // which its relays route differently (workloads/moe_dispatch.hpp):
  // dispatch[i n + j] from i's tokens to GPU j, combine[i n + j] from GPU j
  // back to i; send_bytes[i n + j] = dispatch[i n + j] + combine[j n + i].
  // Empty for other exchanges.
  std::vector<double> dispatch_bytes;
  std::vector<double> combine_bytes;
  // RDMA bytes into a node per byte delivered to its GPUs (a token crosses
  // once per node however many of the node's GPUs it goes to).
  double node_share = 1;
};

struct TaskGraph {
  Graph graph;
  std::vector<std::vector<int>> groups;  // GPU ranks of each collective group, in ring order
  int gpu_count = 0;
  // Memory: what each GPU holds all iteration (weights, gradients,
  // optimizer state), and the allocations and frees of its tasks, grouped
  // by task once seal_memory() has run (each task's range in
  // memory_begin / memory_end).
  std::vector<MemoryBreakdown> resident_memory;
  std::vector<MemoryEvent> memory;
  // Imported traces: each task's name in the trace (timelines and traces
  // show it). Empty for graphs trainsim builds, whose labels come from
  // task_label(Task).
  std::vector<std::string> labels;
  // Uneven exchanges (Task::exchange; workloads::Exchange above).
  std::vector<Exchange> exchanges;

  TaskId add(const Task& task) { return boost::add_vertex(task, graph); }
  int add_exchange(Exchange exchange) {
    exchanges.push_back(std::move(exchange));
    return static_cast<int>(exchanges.size()) - 1;
  }
  void depend(TaskId before, TaskId after) { boost::add_edge(before, after, graph); }
  int add_group(std::vector<int> gpus) {
    groups.push_back(std::move(gpus));
    return static_cast<int>(groups.size()) - 1;
  }
  std::size_t size() const { return boost::num_vertices(graph); }
  const Task& operator[](TaskId id) const { return graph[id]; }
  void add_memory(TaskId task, int gpu, MemoryEvent::At at, MemoryKind kind, double bytes) {
    if (bytes != 0)
      memory.push_back({task, gpu, at, kind, bytes});
  }
  // Groups the memory events by task (stable) and records each task's range.
  void seal_memory();
};

// What a task does to one GPU's memory: the net bytes allocated when it
// starts and when it ends (negative: freed). The analysis helper's
// MemoryModel::effect(task, gpu) is {at_start_bytes, -at_end_bytes}.
struct TaskMemoryEffect {
  double at_start_bytes = 0;
  double at_end_bytes = 0;
};
TaskMemoryEffect task_memory_effect(const TaskGraph& graph, const Task& task, int gpu);

// A short, stable label for timelines and traces: "F mb3", "B mb0",
// "tp all_reduce", "pp send mb2", "dp all_reduce", "optimizer"; a compute
// op of a later model chunk adds it ("F mb3 chunk1"), BPipe's transfers
// read "pp evict mb2" and "pp reload mb2". A piece of a split op adds its
// layer ("B mb3 layer7") and, for the attention core under ring attention,
// "attn"; a collective tied to one layer adds it too ("dp all_gather mb3
// layer7").
std::string task_label(const Task& task);
// The label of a task of `graph`: its name in an imported trace, else
// task_label(task).
std::string task_label(const TaskGraph& graph, TaskId id);

}  // namespace trainsim::workloads
