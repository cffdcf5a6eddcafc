#pragma once
// The token sort a MoE dispatcher runs between its all-to-all and the local
// experts, and the unsort between them and the combine: "permutation 2" of
// Megatron-core's alltoall token dispatcher
// (megatron/core/transformer/moe/token_dispatcher.py,
// MoEAlltoAllTokenDispatcher.dispatch_postprocess / combine_preprocess,
// sort_chunks_by_idxs). The all-to-all delivers the tokens grouped by source
// rank, then by local expert; the grouped GEMM needs them grouped by local
// expert, so with more than one local expert a copy kernel reorders them (TE's
// fused moe_sort_chunks_by_index under moe_permute_fusion, the routing
// probabilities with them) and the inverse copy restores the rank order of
// the experts' outputs before the combine. Their backward kernels apply the
// inverse orders to the gradients. DeepEP and HybridEP (plan.moe_dispatcher:
// deepep) deliver the tokens in expert order and run no such copy.
//
// Bytes, per token copy the GPU's experts process and hidden element h
// (BF16 in and out): sort 2 + 2 and its probability 4 + 4 per copy, unsort
// 2 + 2; each backward the same.
#include <vector>

#include "workloads/parallel_plan.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {

// Whether the dispatcher reorders the received tokens by local expert.
struct DispatcherSortTraits {
  MoeDispatcher dispatcher;
  bool sorts_by_local_expert;
};
const std::vector<DispatcherSortTraits>& dispatcher_sort_table();
bool sorts_by_local_expert(MoeDispatcher dispatcher);

// Where in a MoE layer's pass the kernel runs: between the dispatch and the
// experts, or between the experts and the combine.
enum class SortSide { after_dispatch, before_combine };

// The sort kernels of one pass on one side of the experts: empty when the
// dispatcher does not sort or the GPU holds one expert (nothing to reorder).
// `rows`: the token copies the GPU's local experts process; `hidden`: h.
std::vector<TransformerOp> expert_sort_ops(MoeDispatcher dispatcher, double local_experts, double rows,
                                           double hidden, OpPass pass, SortSide side);

}  // namespace trainsim::workloads
