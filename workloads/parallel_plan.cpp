#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

std::string_view to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::gpipe:
      return "gpipe";
    case ScheduleKind::one_f_one_b:
      return "1f1b";
    case ScheduleKind::interleaved_one_f_one_b:
      return "interleaved_1f1b";
    case ScheduleKind::zb_h1:
      return "zb_h1";
    case ScheduleKind::zb_h2:
      return "zb_h2";
    case ScheduleKind::zb_v:
      return "zb_v";
    case ScheduleKind::bpipe:
      return "bpipe";
    case ScheduleKind::dualpipe_v:
      return "dualpipe_v";
  }
  return "?";
}

std::string_view to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

std::string_view to_string(Framework framework) {
  switch (framework) {
    case Framework::megatron:
      return "megatron";
    case Framework::pytorch_fsdp:
      return "pytorch_fsdp";
    case Framework::pytorch_fsdp2:
      return "pytorch_fsdp2";
  }
  return "?";
}

}  // namespace trainsim::workloads
