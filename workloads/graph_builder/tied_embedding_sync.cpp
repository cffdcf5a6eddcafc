// The all-reduce of the shared word embedding's gradient between the first
// and the last pipeline stage. Megatron builds the output layer of the last
// stage on a copy of the word embeddings when they are tied
// (model.tied_embeddings), and the multi-token-prediction modules of the
// last stage read the next tokens through such a copy (model.mtp_depth > 0,
// tied or not). It keeps the copies equal by summing their gradients once
// per step: finalize_model_grads (Megatron-core core_r0.8.0 and since,
// distributed/finalize_model_grads.py) runs, after the data-parallel
// gradient synchronisation (finish_grad_sync) and before the optimizer step,
// _allreduce_word_embedding_grads: an all-reduce of the weight's main_grad
// over the "embedding group", the GPU of the first and the GPU of the last
// pipeline stage with the same data-, context- and tensor-parallel ranks
// (_get_shared_word_embedding_weight: "share_embeddings_and_output_weights
// or mtp_num_layers"). The tensor is the TP rank's vocabulary shard
// (VocabParallelEmbedding: vocab / tp x hidden) in the gradient's dtype
// (main_grad: plan.grad_bytes), whole on every ZeRO stage (the distributed
// optimizer's gradient buffer holds the full tensor). DeepSpeed's pipeline
// engine does the same for its tied modules (allreduce_tied_weight_gradients)
// and PyTorch's pipelining has no weights shared across stages, so trainsim
// charges it under every framework: the copies must be kept equal somehow.
//
// Both GPUs' optimizer steps wait for it, and it waits for both GPUs'
// gradient synchronisation (the `after` each step was given). The pair's
// collective is made when the first of its two GPUs reaches its step; the
// second adds its own dependencies to it. DualPipe-V's V shape ends the
// model on rank 0: the embedding and the output layer share the GPU and the
// weight, nothing to reduce. So does DualPipe's up direction (its ranks 0
// and p - 1 each hold an embedding and an output layer), whose copies the
// all-reduce of dualpipe_copy_sync.cpp keeps equal with everything else.
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"

namespace trainsim::workloads::detail {

int IterationBuilder::output_layer_rank() const {
  const PipelineSchedule& layout = schedule(0);
  return layout.rank_of(layout.virtual_stages() - 1);
}

bool IterationBuilder::syncs_tied_embedding() const {
  return (model_.tied_embeddings || model_.mtp_depth > 0) && plan_.pp > 1 && output_layer_rank() != 0;
}

double IterationBuilder::tied_embedding_grad_bytes() const {
  return double(model_.vocab) * model_.hidden / plan_.tp * plan_.grad_bytes;
}

TaskId IterationBuilder::add_tied_embedding_sync(int rank, int gpu, TaskId after) {
  if (!syncs_tied_embedding() || (rank != 0 && rank != output_layer_rank()))
    return after;
  const int dp = plan_.dp_rank_of(gpu), tp = plan_.tp_rank_of(gpu), cp = plan_.cp_rank_of(gpu);
  return add_pair_all_reduce(tied_embedding_sync_, plan_.gpu_of(0, dp, tp, cp),
                             plan_.gpu_of(output_layer_rank(), dp, tp, cp), rank, gpu, after,
                             tied_embedding_grad_bytes());
}

}  // namespace trainsim::workloads::detail
