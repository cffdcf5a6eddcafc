#include "workloads/task_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "platforms/nearly_sorted.hpp"

namespace trainsim::workloads {

std::string_view to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::forward:
      return "forward";
    case TaskKind::backward:
      return "backward";
    case TaskKind::backward_input:
      return "backward_input";
    case TaskKind::backward_weight:
      return "backward_weight";
    case TaskKind::optimizer:
      return "optimizer";
    case TaskKind::send:
      return "send";
    case TaskKind::collective:
      return "collective";
    case TaskKind::compute:
      return "compute";
  }
  return "?";
}

std::string_view to_string(CommKind kind) {
  switch (kind) {
    case CommKind::none:
      return "none";
    case CommKind::tp:
      return "tp";
    case CommKind::pp:
      return "pp";
    case CommKind::dp:
      return "dp";
    case CommKind::cp:
      return "cp";
    case CommKind::ep:
      return "ep";
  }
  return "?";
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "all_reduce";
    case CollectiveOp::reduce_scatter:
      return "reduce_scatter";
    case CollectiveOp::all_gather:
      return "all_gather";
    case CollectiveOp::broadcast:
      return "broadcast";
    case CollectiveOp::all_to_all:
      return "all_to_all";
    case CollectiveOp::send_recv:
      return "send_recv";
  }
  return "?";
}

std::string_view to_string(TransferKind kind) {
  switch (kind) {
    case TransferKind::none:
      return "none";
    case TransferKind::activation:
      return "activation";
    case TransferKind::gradient:
      return "gradient";
    case TransferKind::evict:
      return "evict";
    case TransferKind::reload:
      return "reload";
  }
  return "?";
}

std::string_view to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::weights:
      return "weights";
    case MemoryKind::gradients:
      return "gradients";
    case MemoryKind::optimizer:
      return "optimizer";
    case MemoryKind::activations:
      return "activations";
    case MemoryKind::buffers:
      return "buffers";
  }
  return "?";
}

double MemoryBreakdown::total() const {
  double sum = 0;
  for (double b : bytes)
    sum += b;
  return sum;
}

MemoryBreakdown& MemoryBreakdown::operator+=(const MemoryBreakdown& other) {
  for (int k = 0; k < kMemoryKindCount; ++k)
    bytes[k] += other.bytes[k];
  return *this;
}

TaskId TaskGraph::add(const Task& task) {
  if (sealed_)
    throw std::logic_error("a task added to a sealed task graph");
  if (tasks_.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("a task graph of 2^32 - 1 tasks or more (task ids are 32-bit)");
  tasks_.push_back(task);
  return tasks_.size() - 1;
}

void TaskGraph::depend(TaskId before, TaskId after) {
  if (sealed_)
    throw std::logic_error("a dependency added to a sealed task graph");
  if (before >= tasks_.size() || after >= tasks_.size())
    throw std::logic_error("a dependency on a task not added");
  if (added_.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("a task graph of 2^32 - 1 dependencies or more (edge indices are 32-bit)");
  added_.emplace_back(static_cast<std::uint32_t>(before), static_cast<std::uint32_t>(after));
}

TaskGraph::Mark TaskGraph::mark() const {
  if (sealed_)
    throw std::logic_error("a sealed task graph marked for copying");
  return {tasks_.size(), added_.size(), memory.size(), groups.size()};
}

void TaskGraph::append_image(const Mark& begin, const Mark& end, const std::vector<int>& gpu_image) {
  append_image(begin, end, gpu_image, Copied{});
}

void TaskGraph::append_image(const Mark& begin, const Mark& end, const std::vector<int>& gpu_image,
                             const Copied& earlier) {
  if (sealed_)
    throw std::logic_error("a block copied into a sealed task graph");
  if (!labels.empty())
    throw std::logic_error("a block copied in a graph of named tasks");
  if (begin.tasks > end.tasks || end.tasks > tasks_.size() || begin.dependencies > end.dependencies ||
      end.dependencies > added_.size() || begin.memory_events > end.memory_events ||
      end.memory_events > memory.size() || begin.groups > end.groups || end.groups > groups.size())
    throw std::logic_error("a copied block's marks do not bound what the graph holds");
  const auto image_gpu = [&](int gpu) {
    if (gpu < 0)
      return gpu;
    if (static_cast<std::size_t>(gpu) >= gpu_image.size() || gpu_image[static_cast<std::size_t>(gpu)] < 0)
      throw std::logic_error("a copied block names a GPU its image does not map");
    return gpu_image[static_cast<std::size_t>(gpu)];
  };
  const std::size_t task_shift = tasks_.size() - begin.tasks;
  if (earlier.first > earlier.last || earlier.last > begin.tasks ||
      earlier.copy + (earlier.last - earlier.first) > tasks_.size())
    throw std::logic_error("a copied block's earlier block does not lie before it");
  const auto image_task = [&](std::size_t task) {
    if (task >= begin.tasks && task < end.tasks)
      return task + task_shift;
    if (task >= earlier.first && task < earlier.last)
      return task - earlier.first + earlier.copy;
    throw std::logic_error("a copied block's dependency or memory event leaves the block");
  };
  // add()'s and depend()'s limits, checked once for the block: every
  // copied dependency names a task of the block or of `earlier`, both added.
  if (tasks_.size() + (end.tasks - begin.tasks) > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("a task graph of 2^32 - 1 tasks or more (task ids are 32-bit)");
  if (added_.size() + (end.dependencies - begin.dependencies) > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("a task graph of 2^32 - 1 dependencies or more (edge indices are 32-bit)");
  const std::size_t group_shift = groups.size() - begin.groups;
  for (std::size_t g = begin.groups; g < end.groups; ++g) {
    std::vector<int> members = groups[g];
    for (int& gpu : members)
      gpu = image_gpu(gpu);
    groups.push_back(std::move(members));
  }
  for (std::size_t k = begin.tasks; k < end.tasks; ++k) {
    Task& task = tasks_.emplace_back(tasks_[k]);
    task.gpu = image_gpu(task.gpu);
    task.peer = image_gpu(task.peer);
    if (task.group >= 0) {
      const auto group = static_cast<std::size_t>(task.group);
      if (group < begin.groups || group >= end.groups)
        throw std::logic_error("a copied block's task runs on a group outside the block");
      task.group = static_cast<int>(group + group_shift);
    }
    if (task.exchange >= 0)
      throw std::logic_error("a copied block holds an uneven exchange");
  }
  for (std::size_t k = begin.dependencies; k < end.dependencies; ++k) {
    const auto [before, after] = added_[k];
    added_.emplace_back(static_cast<std::uint32_t>(image_task(before)),
                        static_cast<std::uint32_t>(image_task(after)));
  }
  for (std::size_t k = begin.memory_events; k < end.memory_events; ++k) {
    MemoryEvent event = memory[k];
    event.task = image_task(event.task);
    event.gpu = image_gpu(event.gpu);
    memory.push_back(event);
  }
}

void TaskGraph::reserve(const GraphCounts& counts) {
  if (sealed_)
    throw std::logic_error("a sealed task graph reserved");
  tasks_.reserve(counts.tasks);
  added_.reserve(counts.dependencies);
  memory.reserve(counts.memory_events);
}

GraphCounts TaskGraph::counts() const {
  return {tasks_.size(), sealed_ ? boost::num_edges(dependencies_) : added_.size(), memory.size()};
}

void TaskGraph::seal() {
  if (sealed_)
    throw std::logic_error("a task graph sealed twice");
  seal_memory();
  seal_rows();
  std::vector<std::pair<std::uint32_t, std::uint32_t>>().swap(added_);
  sealed_ = true;
}

// The rows Boost's constructor from unsorted edges makes, each in-edge row
// then put back in the order added, filled directly by two stable counting
// sorts in one pass over the edges as added: each task's out-edges in the
// order added (each edge's property its position), each task's in-edges in
// the order added too (each its source and its forward edge index). Boost
// placed the out-edges, walked them source by source to place the
// in-edges, and left them by source, which seal() then sorted back row by
// row (~0.3e9 instructions on scale-16k's 3.05M dependencies; this is one
// count and one placement). Pinned against Boost's own construction by
// `TaskGraph.SealedRowsAreBoostsWithEachInEdgeRowInTheOrderAdded`.
void TaskGraph::seal_rows() {
  const auto n = static_cast<std::uint32_t>(tasks_.size());
  const std::size_t count = added_.size();
  dependencies_ = GraphStorage(n);
  auto& forward = dependencies_.m_forward;
  auto& backward = dependencies_.m_backward;
  // Each row's length at its own index, then its start (an exclusive sum):
  // the placement below moves each to its end, the next row's start, and
  // the shift by one makes them starts again.
  std::uint32_t* out_at = forward.m_rowstart.data();
  std::uint32_t* in_at = backward.m_rowstart.data();
  for (const auto& [before, after] : added_) {
    ++out_at[before];
    ++in_at[after];
  }
  std::uint32_t out_sum = 0, in_sum = 0;
  for (std::uint32_t v = 0; v < n; ++v) {
    out_sum += std::exchange(out_at[v], out_sum);
    in_sum += std::exchange(in_at[v], in_sum);
  }
  forward.m_column.resize(count);
  forward.m_edge_properties.resize(count);
  backward.m_column.resize(count);
  backward.m_edge_properties.resize(count);
  for (std::size_t position = 0; position < count; ++position) {
    const auto [before, after] = added_[position];
    const std::uint32_t edge = out_at[before]++;
    forward.m_column[edge] = after;
    forward.m_edge_properties[edge] = static_cast<DependencyPosition>(position);
    const std::uint32_t in_edge = in_at[after]++;
    backward.m_column[in_edge] = before;
    backward.m_edge_properties[in_edge] = edge;
  }
  for (auto* rowstart : {&forward.m_rowstart, &backward.m_rowstart}) {
    std::copy_backward(rowstart->begin(), rowstart->end() - 1, rowstart->end());
    rowstart->front() = 0;
  }
}

std::size_t TaskGraph::structure_bytes() const {
  const auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  const auto& g = dependencies_;
  return bytes(tasks_) + bytes(added_) + bytes(g.m_forward.m_rowstart) + bytes(g.m_forward.m_column) +
         bytes(g.m_forward.m_edge_properties) + bytes(g.m_backward.m_rowstart) +
         bytes(g.m_backward.m_column) + bytes(g.m_backward.m_edge_properties);
}

void TaskGraph::seal_memory() {
  // The builders add most events near their task's place (an op's events
  // as it is built): an insertion sort moves each back by a few places
  // without the merge sort's buffer (half the events) and n log n work;
  // past a budget of moves the merge sort finishes, stably as well.
  platforms::sort_nearly_sorted(memory.begin(), memory.end(),
                                [](const MemoryEvent& a, const MemoryEvent& b) { return a.task < b.task; });
  for (std::size_t i = 0; i < memory.size();) {
    const TaskId task = memory[i].task;
    Task& t = tasks_[task];
    t.memory_begin = static_cast<std::uint32_t>(i);
    while (i < memory.size() && memory[i].task == task)
      ++i;
    t.memory_end = static_cast<std::uint32_t>(i);
  }
}

TaskMemoryEffect task_memory_effect(const TaskGraph& graph, const Task& task, int gpu) {
  TaskMemoryEffect effect;
  for (std::uint32_t i = task.memory_begin; i < task.memory_end; ++i) {
    const MemoryEvent& e = graph.memory[i];
    if (e.gpu != gpu)
      continue;
    (e.at == MemoryEvent::At::start ? effect.at_start_bytes : effect.at_end_bytes) += e.bytes;
  }
  return effect;
}

std::string task_label(const Task& task) {
  std::string chunk = task.chunk > 0 ? fmt::format(" chunk{}", task.chunk) : std::string();
  if (task.layer >= 0)
    chunk += fmt::format(" layer{}", task.layer);
  if (task.attention)
    chunk += " attn";
  switch (task.kind) {
    case TaskKind::forward:
      return fmt::format("F mb{}{}", task.micro_batch, chunk);
    case TaskKind::backward:
      return fmt::format("B mb{}{}", task.micro_batch, chunk);
    case TaskKind::backward_input:
      return fmt::format("Bi mb{}{}", task.micro_batch, chunk);
    case TaskKind::backward_weight:
      return fmt::format("W mb{}{}", task.micro_batch, chunk);
    case TaskKind::optimizer:
      return "optimizer";
    case TaskKind::compute:
      return fmt::format("compute{}", chunk);
    case TaskKind::send:
      if (task.transfer == TransferKind::evict || task.transfer == TransferKind::reload)
        return fmt::format("{} {} mb{}", to_string(task.comm), to_string(task.transfer), task.micro_batch);
      return fmt::format("{} send mb{}", to_string(task.comm), task.micro_batch);
    case TaskKind::collective: {
      const std::string layer = task.layer >= 0 ? fmt::format(" layer{}", task.layer) : std::string();
      if (task.micro_batch >= 0)
        return fmt::format("{} {} mb{}{}", to_string(task.comm), to_string(task.op), task.micro_batch, layer);
      return fmt::format("{} {}{}", to_string(task.comm), to_string(task.op), layer);
    }
  }
  return "?";
}

std::string task_label(const TaskGraph& graph, TaskId id) {
  if (id < graph.labels.size() && !graph.labels[id].empty())
    return graph.labels[id];
  return task_label(graph[id]);
}

}  // namespace trainsim::workloads
