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
    case Recompute::selective_op:
      return "selective_op";
  }
  return "?";
}

std::string_view to_string(RecomputeModule module) {
  switch (module) {
    case RecomputeModule::core_attn:
      return "core_attn";
    case RecomputeModule::mla_up_proj:
      return "mla_up_proj";
    case RecomputeModule::moe_act:
      return "moe_act";
    case RecomputeModule::mlp:
      return "mlp";
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

std::string_view to_string(TpCommOverlap overlap) {
  switch (overlap) {
    case TpCommOverlap::none:
      return "false";
    case TpCommOverlap::userbuffers:
      return "true";
    case TpCommOverlap::torch_async:
      return "torch_async";
  }
  return "?";
}

std::string_view to_string(P2pMode mode) {
  switch (mode) {
    case P2pMode::automatic:
      return "auto";
    case P2pMode::sync:
      return "sync";
    case P2pMode::async:
      return "async";
    case P2pMode::overlap:
      return "overlap";
  }
  return "?";
}

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return "bf16";
    case Precision::fp8:
      return "fp8";
  }
  return "?";
}

std::string_view to_string(MoeDispatcher dispatcher) {
  return dispatcher == MoeDispatcher::deepep ? "deepep" : "all_to_all";
}

std::string_view to_string(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::delayed:
      return "delayed";
    case Fp8Recipe::current:
      return "current";
    case Fp8Recipe::mxfp8:
      return "mxfp8";
  }
  return "?";
}

}  // namespace trainsim::workloads
