#pragma once
// One training iteration as a directed acyclic graph of tasks (Boost.Graph):
// compute on one GPU, point-to-point transfers, and collectives over a group
// of GPUs. Edges are dependencies: a task starts when all its predecessors
// have finished. The graph holds no SimGrid objects: sim/ replays it,
// analysis/ reads it back next to the timeline.
#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/range/iterator_range.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
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
  // collective: the algorithm asked for; `automatic` defers to the cluster's
  // collectives.algorithm, and that one's `auto` to NCCL-style tuning. The
  // one actually used is recorded in the timeline.
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::automatic;
  // Compute split into pieces (FSDP units, gradient buckets, ring
  // attention): whether it is the attention core that overlaps the
  // context-parallel key/value exchange (its layer: `layer` below).
  bool attention = false;
  // Collective: moved by the GPUs' copy engines, not by kernels on their SMs
  // (torch's async TP shard copies, workloads/torch_async_tp.hpp): overlapped
  // compute keeps its speed (no cluster.collectives.compute_interference).
  bool copy_engine = false;
  // Model chunk on the task's rank (virtual stages), and for compute split
  // into pieces the model layer the piece runs (-1: the whole op). 16 bits
  // each (kMaxTaskLayers), which with the byte fields above keeps a task at
  // 96 bytes: 8 fewer than two ints, 0.55 GiB at a million GPUs.
  std::int16_t chunk = 0;
  std::int16_t layer = -1;
  int gpu = -1;    // compute: the GPU; send: the sender
  int peer = -1;   // send: the receiver
  int group = -1;  // collective: index into TaskGraph::groups
  int stage = -1;  // pipeline rank of the GPU(s) (a send: of the sender)
  int micro_batch = -1;
  // Collective: an uneven exchange (an all-to-all under imbalanced expert
  // routing): index into TaskGraph::exchanges; -1: every member sends every
  // other the same share of `bytes`.
  int exchange = -1;
  // collective: this many identical back-to-back collectives folded into one
  // (a stage's per-layer TP all-reduces); replayed as one pass carrying
  // `fold` times the bytes plus fold - 1 extra latency terms.
  int fold = 1;
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
  // This task's memory events: TaskGraph::memory[memory_begin, memory_end).
  std::uint32_t memory_begin = 0;
  std::uint32_t memory_end = 0;
};
static_assert(sizeof(Task) == 96, "Task changed size: order its fields for the least padding, then update");
// The most model layers (and MTP modules) and chunks a task can name
// (Task::layer, Task::chunk); the loader and the graph builder refuse more.
inline constexpr int kMaxTaskLayers = 32767;
// A chunk or layer index as a task holds it; the builder refuses a plan
// beyond kMaxTaskLayers before it builds, so a wider value is a logic error.
inline std::int16_t task_index(int value) {
  if (value < -1 || value > kMaxTaskLayers)
    throw std::logic_error("a chunk or layer index beyond kMaxTaskLayers reached the task graph");
  return static_cast<std::int16_t>(value);
}

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

// The dependencies once sealed (TaskGraph::seal): Boost's compressed sparse
// rows, bidirectional, with 32-bit task and edge indices. Out-edges and
// in-edges as two offset arrays over 32-bit ids; each edge's property is
// its position in the order depend() added it (what boost::edges() walked
// on the adjacency_list this replaced, and what the graph fingerprint and
// the Chakra export follow). Each task's out-edges and in-edges keep that
// order too. The tasks themselves stay in TaskGraph's vector, outside the
// structure: ~104 + 8 + 16 x (edges per task) bytes per task instead of
// ~385 for the adjacency_list (docs/performance.md, "The task graph in
// compressed rows").
using DependencyPosition = std::uint32_t;
using GraphStorage =
    boost::compressed_sparse_row_graph<boost::bidirectionalS, boost::no_property, DependencyPosition,
                                       boost::no_property, std::uint32_t, std::uint32_t>;

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
  // Under skewed routing, the same per node of the group (its members in
  // order, members per node consecutive): a hot node's share differs from a
  // cold one's. Empty: node_share for every node.
  std::vector<double> node_shares;
};

// A task's vertex in GraphStorage. Boost's functions on it deduce the
// vertex type from both arguments: boost::out_edges(task_vertex(id), g).
inline GraphStorage::vertex_descriptor task_vertex(TaskId id) {
  return static_cast<GraphStorage::vertex_descriptor>(id);
}

// How many tasks, dependencies and memory events a graph holds (or will:
// TaskGraph::reserve takes one before building, so that the vectors never
// grow by doubling, which holds the old and the new copy at once and leaves
// up to half of the last one unused; docs/performance.md, "Towards
// 1,048,576 GPUs: the builder's and the fold's arrays").
struct GraphCounts {
  std::size_t tasks = 0;
  std::size_t dependencies = 0;
  std::size_t memory_events = 0;
  bool operator==(const GraphCounts&) const = default;
};

// Built, then sealed, then read: builders add() tasks and depend() them;
// seal() groups the memory events and packs the dependencies into
// GraphStorage. Reading the dependencies before seal(), or adding to them
// after, is an internal error (std::logic_error). Tasks' fields stay
// writable (builders adjust a task after adding it).
struct TaskGraph {
  std::vector<std::vector<int>> groups;  // GPU ranks of each collective group, in ring order
  int gpu_count = 0;
  // Memory: what each GPU holds all iteration (weights, gradients,
  // optimizer state), and the allocations and frees of its tasks, grouped
  // by task once seal() has run (each task's range in
  // memory_begin / memory_end).
  std::vector<MemoryBreakdown> resident_memory;
  std::vector<MemoryEvent> memory;
  // Imported traces: each task's name in the trace (timelines and traces
  // show it). Empty for graphs trainsim builds, whose labels come from
  // task_label(Task).
  std::vector<std::string> labels;
  // Uneven exchanges (Task::exchange; workloads::Exchange above).
  std::vector<Exchange> exchanges;

  // Task ids are 32-bit in the sealed structure: a graph of 2^32 - 1
  // tasks or dependencies is refused.
  TaskId add(const Task& task);
  int add_exchange(Exchange exchange) {
    exchanges.push_back(std::move(exchange));
    return static_cast<int>(exchanges.size()) - 1;
  }
  void depend(TaskId before, TaskId after);
  int add_group(std::vector<int> gpus) {
    groups.push_back(std::move(gpus));
    return static_cast<int>(groups.size()) - 1;
  }
  std::size_t size() const { return tasks_.size(); }
  // Before building: room for `counts` without reallocating.
  void reserve(const GraphCounts& counts);
  GraphCounts counts() const;
  const Task& operator[](TaskId id) const { return tasks_[id]; }
  Task& operator[](TaskId id) { return tasks_[id]; }
  void add_memory(TaskId task, int gpu, MemoryEvent::At at, MemoryKind kind, double bytes) {
    if (bytes != 0)
      memory.push_back({task, gpu, at, kind, bytes});
  }
  // Builders: how much has been added so far (tasks, dependencies, memory
  // events, groups), and a copy of what was added between two marks onto
  // other GPUs: every task, group member and memory event's GPU g moved to
  // gpu_image[g], the copies' ids and group indices shifted past the
  // graph's end, in the order added. The block must be closed: its
  // dependencies and memory events within it (or `earlier`), its tasks'
  // groups within it, every GPU it
  // names mapped, no uneven exchange (otherwise std::logic_error). What a
  // data-parallel replica alike to one built is (docs/performance.md, "The
  // builder copies replicas alike").
  struct Mark {
    std::size_t tasks = 0, dependencies = 0, memory_events = 0, groups = 0;
  };
  Mark mark() const;
  // An earlier block's tasks [first, last), copied from `copy` on: the
  // copied block's dependencies and memory events may name them too (a
  // replica's sends wait for its ops, copied before).
  struct Copied {
    std::size_t first = 0, last = 0, copy = 0;
  };
  void append_image(const Mark& begin, const Mark& end, const std::vector<int>& gpu_image);
  void append_image(const Mark& begin, const Mark& end, const std::vector<int>& gpu_image,
                    const Copied& earlier);
  // Groups the memory events by task (stable) and records each task's
  // range, then packs the dependencies into compressed rows (the edges as
  // added are dropped). Once only.
  void seal();
  bool sealed() const { return sealed_; }
  // The sealed dependencies, for Boost.Graph's out_edges, in_edges,
  // in_degree, source, target, edges and the algorithms; vertex k is
  // task k, `dependencies()[e]` an edge's position in the order added.
  const GraphStorage& dependencies() const {
    if (!sealed_)
      throw std::logic_error("the task graph's dependencies read before seal()");
    return dependencies_;
  }
  // Calls f(before, after) for every dependency in the order depend()
  // added it (boost::edges() walks the compressed rows by source). Walks
  // the rows once per window of positions, at least `min_window` wide and
  // at most 8 windows: 8 bytes per dependency of a window held meanwhile.
  template <typename F>
  void for_each_dependency_in_order(F&& f, std::size_t min_window = std::size_t{1} << 22) const;
  // Heap bytes the sealed graph holds for its tasks and dependencies (the
  // vectors' capacities; not groups, memory events, labels or exchanges).
  std::size_t structure_bytes() const;

 private:
  void seal_memory();
  void seal_rows();

  std::vector<Task> tasks_;
  // Until seal(): the dependencies as added (before, after).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> added_;
  GraphStorage dependencies_;
  bool sealed_ = false;
};

template <typename F>
void TaskGraph::for_each_dependency_in_order(F&& f, std::size_t min_window) const {
  const GraphStorage& g = dependencies();
  const std::size_t count = boost::num_edges(g);
  min_window = std::max<std::size_t>(1, min_window);
  const std::size_t windows = std::min<std::size_t>(8, (count + min_window - 1) / min_window);
  const std::size_t window = windows == 0 ? 0 : (count + windows - 1) / windows;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges(window);
  for (std::size_t begin = 0; begin < count; begin += window) {
    const std::size_t end = std::min(count, begin + window);
    for (std::uint32_t v = 0; v < boost::num_vertices(g); ++v)
      for (auto [e, e_end] = boost::out_edges(v, g); e != e_end; ++e)
        if (const std::size_t at = g[*e]; at >= begin && at < end)
          edges[at - begin] = {v, boost::target(*e, g)};
    for (std::size_t k = 0; k < end - begin; ++k)
      f(TaskId{edges[k].first}, TaskId{edges[k].second});
  }
}

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
