#pragma once
// Model FLOPs per token under the definitions publications use, so that an
// MFU can be compared with a published one counted the same way
// (docs/outputs.md, "MFU definitions").
//
// trainsim's own `mfu` sums the model FLOPs its compute tasks carry: every
// matmul of the layers and of the output layer (the input embedding is a
// lookup), plus the full (un-halved) causal attention, 12 L s h per token
// forward and backward; a MoE model counts its active experts and its
// router. The others follow their sources' formulas from the model's shape:
//
//   mfu_6n      6 N, N every parameter (embeddings included, MoE: active);
//               no attention term
//   mfu_palm    6 N + 12 L H Q T, N without the input embedding (PaLM,
//               appendix B; torchtitan's implementation of it)
//   mfu_nvidia  NVIDIA's DGX Cloud / NeMo tables' model FLOPs (NeMo's
//               flops_formulas.py before it halved causal attention):
//               attention and MLP matmuls, full attention, the output layer
#include <string_view>
#include <vector>

#include "workloads/model_spec.hpp"

namespace trainsim::analysis {

enum class MfuDefinition { six_n, palm, nvidia };

struct MfuDefinitionInfo {
  MfuDefinition definition;
  std::string_view key;     // the summary.json key: "mfu_6n"
  std::string_view label;   // in the terminal summary: "6N"
  std::string_view source;  // where the formula comes from
};

// Every definition, in summary.json's order.
const std::vector<MfuDefinitionInfo>& mfu_definitions();

// Model FLOPs of one token, forward and backward, under the definition.
// 0 for a run without a model shape (a Chakra trace).
double model_flops_per_token(const workloads::ModelSpec& model, MfuDefinition definition);

}  // namespace trainsim::analysis
