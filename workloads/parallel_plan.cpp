#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

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
