#pragma once
// PyTorch's async TP (plan.tp_comm_overlap: torch_async; torchtitan's
// enable_async_tensor_parallel): torch._inductor's micro-pipeline TP pass
// replaces a sequence-parallel all-gather followed by GEMMs with
// symm_mem.fused_all_gather_matmul and a GEMM followed by a reduce-scatter
// with symm_mem.fused_matmul_reduce_scatter
// (torch/distributed/_symmetric_memory/__init__.py). Both split the GEMM
// along its tokens into tp shard GEMMs and move the shards peer to peer
// with copy-engine copies (tensor.copy_ from a peer's symmetric buffer over
// NVLink, one copy at a time: "cp from different streams cannot overlap"):
//
//   all-gather + GEMM (_pipelined_all_gather_and_consume):
//     copy of the local shard into the symmetric buffer, barrier (exposed);
//     GEMM of the local shard while the first peer's shard is copied; then
//     each peer's shard GEMM once its copy is in:
//       [ mv ][ g0 ][ g1 ][ g2 ] ... [ g(k-1) ]
//             [ cp1 ][ cp2 ] ... [ cp(k-1) ]
//   GEMM + reduce-scatter (_pipelined_produce_and_all2all):
//     the partial output for one peer, then (barrier) that peer pulls it
//     while the next is computed; the local chunk last; then one kernel
//     sums the tp partials (reduce_partials):
//       [ g1 ][ g2 ] ... [ g(k-1) ][ g_local ][ sum ]
//             [ cp1 ] ...   [ cp(k-1) ]
//
// Both end c + (k - 1) max(c, m) after they start (plus the exposed copy or
// sum), c one shard GEMM at its own shape's efficiency (m / tp rows: the
// efficiency curve's smaller output), m one shard's copy. The graph builder
// (iteration_builder.cpp, add_async_tp_units) writes each fused op as these
// events: the exposed kernel, the first shard's GEMM, the other tp - 1 shard
// GEMMs beside the tp - 1 copies (one send_recv task over the TP group
// folding the tp - 1 ring shifts, one latency each: the barriers), and the
// last shard or the sum after both; uniform shards make this exact.
// The copies take no SMs (the copy engine), so they do not take the NCCL
// share of the overlapped compute (cluster.collectives.compute_interference)
// that the TP collectives do; the HBM they use beside compute-bound GEMMs is
// not charged.
//
// What the pass fuses in a dense Llama / GPT layer (sequence parallel): the
// forward's four (all-gather + QKV, output projection + reduce-scatter,
// all-gather + MLP up, MLP down + reduce-scatter), a fully recomputed
// forward's four again, and in the input-gradient pass the all-gathers of
// the output gradients before the output projection's and the MLP down's
// dgrad GEMMs. The reduce-scatters after the QKV and MLP-up dgrads sum
// several GEMMs (wq, wk and wv; w1 and w3), which the pass's pattern
// (reduce_scatter(A @ B), one matmul) does not match: they stay NCCL
// reduce-scatters after the op, as do the all-gathers recompute
// selective_op repeats.
#include <optional>
#include <vector>

#include "workloads/schedule.hpp"
#include "workloads/task_graph.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {

// One fused op of one layer's pass on one GPU.
struct AsyncTpUnit {
  CollectiveOp collective = CollectiveOp::all_gather;  // all_gather or reduce_scatter
  double gemm_s = 0;        // its GEMM undivided: what the pass's time holds for it
  double shard_gemm_s = 0;  // one of its tp shard GEMMs, at that shape
  // Outside the pipeline: the local shard's copy into the symmetric buffer
  // (all-gather) or the sum of the tp partial outputs (reduce-scatter).
  double exposed_s = 0;
};

// The collective the pass fuses with this GEMM of a dense layer (by its name
// in transformer_ops.cpp), or none.
std::optional<CollectiveOp> async_tp_collective_of(const TransformerOp& op);

// A GEMM's shard: m / tp rows, FLOPs divided by tp, the activations' bytes
// divided by tp and the weight read whole.
TransformerOp async_tp_shard(const TransformerOp& op, int tp);

// HBM bytes of the exposed kernel of `op`'s fused op: the local shard read
// and written (all-gather; its input, in the GEMM's input format), or the
// tp partials read and the output shard written (reduce-scatter; 16-bit).
double async_tp_exposed_bytes(const TransformerOp& op, CollectiveOp collective, int tp);

// Per layer, the TP collectives of a pass of `kind` that stay NCCL ones
// under torch_async, before recompute selective_op's all-gathers: the two
// reduce-scatters after the QKV and MLP-up dgrads in a pass with input
// gradients, none in a forward or weight-gradient pass.
int async_tp_plain_reduce_scatters(PipeOpKind kind);

}  // namespace trainsim::workloads
