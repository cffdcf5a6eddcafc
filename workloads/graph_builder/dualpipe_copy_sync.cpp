// DualPipe's two copies of the parameters (workloads/schedules/dualpipe.cpp):
// pipeline rank r holds stage r of the down direction and stage p - 1 - r of
// the up direction, rank p - 1 - r the same two stages the other way round,
// so the pair (r, p - 1 - r) holds the same parameters and each copy sees
// the gradients of half of the micro-batches. "DualPipe requires keeping two
// copies of the model parameters" (DeepSeek-V3 technical report, 3.2.1);
// the reference sums the copies' gradients after its step
// (deepseek-ai/DualPipe, examples/example_dualpipe.py: an all-gather over
// the pipeline group, then each chunk adds its partner's, p0.grad +=
// p1all[pp_size - 1 - rank]), which moves what a two-GPU all-reduce does.
// trainsim charges that all-reduce between the GPU of rank r and the GPU of
// rank p - 1 - r with the same data-, context- and tensor-parallel ranks,
// of the gradients the GPU's optimizer steps on (its ZeRO shard when the
// data-parallel reduction sharded them: both copies are sharded the same
// way), in the gradients' dtype (plan.grad_bytes), after both GPUs'
// data-parallel gradient synchronisation and before both optimizer steps,
// as the tied embedding's all-reduce (tied_embedding_sync.cpp), which
// DualPipe does not need: ranks 0 and p - 1 each hold an embedding and an
// output layer.
#include <algorithm>

#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"

namespace trainsim::workloads::detail {

bool IterationBuilder::syncs_parameter_copies() const {
  return schedule(0).bidirectional() && plan_.pp > 1;
}

TaskId IterationBuilder::add_parameter_copy_sync(int rank, int gpu, TaskId after, double parameters) {
  if (!syncs_parameter_copies())
    return after;
  const int dp = plan_.dp_rank_of(gpu), tp = plan_.tp_rank_of(gpu), cp = plan_.cp_rank_of(gpu);
  const int partner = plan_.pp - 1 - rank;
  return add_pair_all_reduce(parameter_copy_sync_, plan_.gpu_of(std::min(rank, partner), dp, tp, cp),
                             plan_.gpu_of(std::max(rank, partner), dp, tp, cp), rank, gpu, after,
                             parameters * plan_.grad_bytes);
}

}  // namespace trainsim::workloads::detail
