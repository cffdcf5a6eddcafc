#include "analysis/timeline.hpp"

namespace trainsim::analysis {

std::string_view to_string(Stream stream) {
  switch (stream) {
    case Stream::compute:
      return "compute";
    case Stream::tp_comm:
      return "tp_comm";
    case Stream::pp_comm:
      return "pp_comm";
    case Stream::dp_comm:
      return "dp_comm";
    case Stream::cp_comm:
      return "cp_comm";
    case Stream::ep_comm:
      return "ep_comm";
  }
  return "?";
}

std::string_view to_string(Representation representation) {
  switch (representation) {
    case Representation::flows:
      return "flows";
    case Representation::isolated:
      return "isolated";
    case Representation::shared:
      return "shared";
    case Representation::isolated_then_shared:
      return "isolated_then_shared";
    case Representation::shared_then_isolated:
      return "shared_then_isolated";
  }
  return "?";
}

Stream stream_of(const workloads::Task& task) {
  switch (task.comm) {
    case workloads::CommKind::none:
      return Stream::compute;
    case workloads::CommKind::tp:
      return Stream::tp_comm;
    case workloads::CommKind::pp:
      return Stream::pp_comm;
    case workloads::CommKind::dp:
      return Stream::dp_comm;
    case workloads::CommKind::cp:
      return Stream::cp_comm;
    case workloads::CommKind::ep:
      return Stream::ep_comm;
  }
  return Stream::compute;
}

}  // namespace trainsim::analysis
