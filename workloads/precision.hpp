#pragma once
// The number format a plan trains its GEMMs in (plan.precision) and, for
// FP8, the scaling recipe (plan.fp8_recipe), as Megatron-core with
// Transformer Engine (TE) runs them. What FP8 changes, each from the kernels
// TE runs (docs/precision.md has the derivations and sources):
//
//   the linear GEMMs (QKV, output projection, MLP, experts, shared experts:
//   forward, dgrad and wgrad) run on the FP8 tensor cores, timed under the
//   GPU's `matmul_fp8` efficiency curves; their FP8 operands are 1 byte.
//   Attention, norms, softmax, the router, the output layer, the loss and the
//   optimizer stay in BF16 / FP32.
//
//   every FP8 GEMM input is quantized by a memory-bound kernel of its own
//   (with_precision below): forward inputs, and in the backward the output
//   gradient (cast and transposed for the wgrad). TE fuses the cast of the
//   QKV and first MLP inputs into the layer norm before them (LayerNormLinear)
//   under delayed and MXFP8 scaling; current scaling needs the tensor's amax
//   first, one more read, so it fuses nothing. On Hopper (delayed, current)
//   the wgrad needs the input transposed: written by the cast (no sequence
//   parallelism) or by a transpose after the backward's all-gather (with
//   it). MXFP8 (Blackwell) writes the row-wise and column-wise copies, with
//   one E8M0 scale per 32 elements, in the cast.
//
//   weights are cast once per step (TE caches them across micro-batches;
//   with fp8_param_gather the optimizer writes FP8 weights directly): the
//   optimizer step's bytes.
//
//   memory: the saved inputs of the linear GEMMs are FP8 (activation_memory),
//   and the FP8 weight and transpose copies TE keeps beside the BF16 weights
//   (none beside FP8 primary weights, fp8_param_gather).
//
//   communication: with fp8_param_gather (Megatron --fp8-param-gather,
//   NeMo fp8_params) the distributed optimizer's and FSDP's parameter
//   all-gathers carry 1 byte per FP8 weight; under sequence parallelism the
//   TP all-gathers carry the FP8-cast inputs and output gradients; the TP
//   reduce-scatters stay BF16.
#include <string_view>
#include <vector>

#include "workloads/parallel_plan.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {

// Whether `op` is a GEMM that FP8 training runs in FP8 (linear layers of a
// transformer layer; not the attention core, the router or the logits).
bool runs_in_fp8(const TransformerOp& op);

// `ops` (one layer's, all passes, in execution order) under the plan's
// precision: unchanged for BF16; for FP8 the linear GEMMs marked fp8 with
// 1-byte operands and the quantization kernels inserted before the GEMMs
// that read them.
std::vector<TransformerOp> with_precision(std::vector<TransformerOp> ops, const ParallelPlan& plan);

// Bytes one saved input element of a linear GEMM takes between forward and
// backward: 2 (BF16), 1 (FP8), 1 + 1/32 (MXFP8: its E8M0 scale per 32).
double saved_linear_input_bytes(const ParallelPlan& plan);

// Extra bytes per weight of the linear layers that the optimizer step moves
// to produce the FP8 weights of the next step: read the BF16 weight (2),
// write the FP8 copy and its transpose / column-wise copy (1 + 1; MXFP8's
// scales on top); 0 with FP8 primary weights, which the optimizer writes in
// place of the BF16 ones (the same bytes).
double fp8_weight_cast_bytes_per_parameter(const ParallelPlan& plan);

// Resident bytes per weight of the linear layers beyond the BF16 weight:
// TE's FP8 copy and transpose (2; MXFP8 2 + 2/32); with FP8 primary weights
// (fp8_param_gather) the weight is 1 byte and its transpose 1: 0 more.
double fp8_weight_copy_bytes_per_parameter(const ParallelPlan& plan);

// Bytes per parameter of the parameter all-gathers (ZeRO >= 1, FSDP): 2, or
// 1 for the FP8 weights with fp8_param_gather. `fp8_share` is the fraction
// of the gathered parameters that are FP8 weights.
double param_gather_bytes_per_parameter(const ParallelPlan& plan, double fp8_share);

// The factor on the BF16 bytes of a TP collective pass: 0.5 for the
// all-gathers of a sequence-parallel FP8 plan (TE casts a GEMM's input, and
// in the backward its output gradient, to FP8 before gathering it), 1 for
// the reduce-scatters and all-reduces (TE's default BF16 buffers; the FP8
// reduce-scatter buffers a recipe may ask for, fp8_buf, are not modelled).
double tp_collective_byte_factor(const ParallelPlan& plan, bool all_gather);

}  // namespace trainsim::workloads
