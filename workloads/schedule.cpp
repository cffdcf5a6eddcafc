#include "workloads/schedule.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace trainsim::workloads {

std::string to_string(const std::vector<PipeOp>& ops, int chunks) {
  std::string out;
  for (const auto& op : ops) {
    char letter = 'F';
    switch (op.kind) {
      case PipeOpKind::forward:
        letter = 'F';
        break;
      case PipeOpKind::backward:
        letter = 'B';
        break;
      case PipeOpKind::backward_input:
        letter = 'B';
        break;
      case PipeOpKind::backward_weight:
        letter = 'W';
        break;
    }
    if (!out.empty())
      out += ' ';
    out += chunks > 1 ? fmt::format("{}{}.{}", letter, op.micro_batch, op.chunk)
                      : fmt::format("{}{}", letter, op.micro_batch);
  }
  return out;
}

PipelineSchedule make_schedule(ScheduleKind kind, int ranks, int micro_batches) {
  switch (kind) {
    case ScheduleKind::gpipe:
      return make_gpipe(ranks, micro_batches);
    case ScheduleKind::one_f_one_b:
      return make_one_f_one_b(ranks, micro_batches);
  }
  throw std::logic_error("unhandled schedule kind");
}

}  // namespace trainsim::workloads
