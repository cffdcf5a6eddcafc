#include "workloads/task_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

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

void TaskGraph::seal_memory() {
  std::stable_sort(memory.begin(), memory.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.task < b.task; });
  for (std::size_t i = 0; i < memory.size();) {
    const TaskId task = memory[i].task;
    Task& t = graph[task];
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
