#include "workloads/torch_async_tp.hpp"

namespace trainsim::workloads {

std::optional<CollectiveOp> async_tp_collective_of(const TransformerOp& op) {
  if (op.kind != OpKind::matmul)
    return std::nullopt;
  if (op.pass == OpPass::forward) {
    if (op.name == "qkv" || op.name == "mlp_up")
      return CollectiveOp::all_gather;
    if (op.name == "proj" || op.name == "mlp_down")
      return CollectiveOp::reduce_scatter;
  }
  if (op.pass == OpPass::backward_input && (op.name == "proj.dgrad" || op.name == "mlp_down.dgrad"))
    return CollectiveOp::all_gather;
  return std::nullopt;
}

TransformerOp async_tp_shard(const TransformerOp& op, int tp) {
  TransformerOp shard = op;
  const double t = tp;
  const double elements = op.m * op.k + op.k * op.n + op.m * op.n;
  const double shard_elements = op.m / t * op.k + op.k * op.n + op.m / t * op.n;
  shard.m = op.m / t;
  shard.flops = op.flops / t;
  shard.bytes = elements > 0 ? op.bytes * shard_elements / elements : 0;
  return shard;
}

double async_tp_exposed_bytes(const TransformerOp& op, CollectiveOp collective, int tp) {
  const double t = tp;
  if (collective == CollectiveOp::all_gather)
    return 2 * op.m / t * op.k * (op.fp8 ? 1.0 : 2.0);
  return 2.0 * (op.m * op.n + op.m / t * op.n);
}

int async_tp_plain_reduce_scatters(PipeOpKind kind) {
  return kind == PipeOpKind::backward || kind == PipeOpKind::backward_input ? 2 : 0;
}

}  // namespace trainsim::workloads
