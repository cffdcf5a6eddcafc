#include "workloads/task_graph.hpp"

#include <fmt/format.h>

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

std::string task_label(const Task& task) {
  const std::string chunk = task.chunk > 0 ? fmt::format(" chunk{}", task.chunk) : std::string();
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
    case TaskKind::send:
      if (task.transfer == TransferKind::evict || task.transfer == TransferKind::reload)
        return fmt::format("{} {} mb{}", to_string(task.comm), to_string(task.transfer), task.micro_batch);
      return fmt::format("{} send mb{}", to_string(task.comm), task.micro_batch);
    case TaskKind::collective:
      if (task.micro_batch >= 0)
        return fmt::format("{} {} mb{}", to_string(task.comm), to_string(task.op), task.micro_batch);
      return fmt::format("{} {}", to_string(task.comm), to_string(task.op));
  }
  return "?";
}

}  // namespace trainsim::workloads
