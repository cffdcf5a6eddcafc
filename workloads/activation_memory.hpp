#pragma once
// Activation memory a transformer layer keeps from its forward until its
// backward, per GPU and micro-batch (Korthikanti et al., MLSys 2023,
// "Reducing Activation Recomputation in Large Transformer Models"; formulas
// in ../shared/reference/cost-models.md: 16-bit activations, 1-byte dropout
// masks, GPT layers with f = 4h). BPipe sizes its evictions with it; the
// memory model reuses it.
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

// Bytes one layer stores for one micro-batch on one GPU of its TP group:
//   recompute none:      s b h (10 + 24/t + 5 a s / (h t))
//   recompute selective: s b h (10 + 24/t)   (the attention core is recomputed)
//   recompute full:      2 s b h             (only the layer input)
// The plan has no sequence parallelism yet: with it every term divides by t
// (s b h (34 + 5 a s / h) / t, 34 s b h / t, 2 s b h / t).
double layer_activation_bytes(const ModelSpec& model, const ParallelPlan& plan);

// A pipeline stage (or model chunk) of `layers` layers: what one micro-batch
// leaves behind on each GPU, and what BPipe moves to the acceptor stage.
double stage_activation_bytes(const ModelSpec& model, const ParallelPlan& plan, int layers);

}  // namespace trainsim::workloads
