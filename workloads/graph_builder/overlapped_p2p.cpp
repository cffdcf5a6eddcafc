// plan.p2p: overlap, the pairing of Megatron-core's interleaved schedule
// with overlap_p2p_comm (its default with virtual stages): core_r0.8.0,
// megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving.
//
// After each forward a rank calls send_forward_recv_forward(...,
// overlap_p2p_comm=True): it posts the send of the output it just computed
// and the receive of its next forward's input, and keeps the handles
// (fwd_wait_handles). Before its next forward it waits on both. After each
// backward it does the same with send_backward_recv_backward and
// bwd_wait_handles, waited before its next backward; the first backward's
// receive is posted in the last warm-up iteration, after the last warm-up
// forward. The cool-down's exchanges (send_backward_recv_backward without
// overlap) post the same pair after each backward and wait on it at once,
// which gives the stream the same order. So, unlike `async`:
// - a transfer starts once its receiver has posted the receive, i.e. once
//   the receiver has finished its previous op of the consumer's kind
//   (NCCL matches a send with its receive; a large message does not leave
//   before the receive is posted), and
// - the sender's next op of the producer's kind waits for the transfer
//   (the wait on the send's handle), the last backward's send holds the
//   rank's end (the cool-down's blocking exchange).
// Unlike `sync`, the op of the other kind between them runs meanwhile: in
// the steady state a backward hides a forward's send, a forward a
// backward's. The warm-up's back-to-back forwards and the cool-down's
// back-to-back backwards are where the transfers show.
//
// Not modelled: the handles of the last steady forward's send are never
// waited on explicitly (later exchanges of the same NCCL communicator queue
// behind it on its stream), and one NCCL stream per communicator serialising
// a rank's forward and backward exchanges.
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"

namespace trainsim::workloads::detail {
namespace {

// Forwards are waited with forwards (fwd_wait_handles), every kind of
// backward with backwards (bwd_wait_handles).
bool same_handles(PipeOpKind a, PipeOpKind b) {
  return (a == PipeOpKind::forward) == (b == PipeOpKind::forward);
}

}  // namespace

std::optional<std::size_t> IterationBuilder::overlap_receive_posted(int gpu, std::size_t consumer) const {
  const auto& ops = ops_[idx(gpu)];
  const PipeOpKind kind = ops[consumer].op.kind;
  for (std::size_t q = consumer; q-- > 0;)
    if (same_handles(ops[q].op.kind, kind))
      return q;
  // A first forward's input: recv_forward before the loop.
  if (kind == PipeOpKind::forward || consumer == 0)
    return std::nullopt;
  // The first backward's gradient: posted after the last warm-up forward.
  // With a steady state, that forward is followed by the steady state's
  // first forward, then this backward; when every forward is a warm-up
  // forward (m = pp), right before it.
  std::size_t forwards = 0;
  for (const BuiltOp& op : ops)
    forwards += op.op.kind == PipeOpKind::forward;
  if (consumer == forwards || consumer < 2)
    return consumer - 1;
  return consumer - 2;
}

void IterationBuilder::overlap_hold_sender(TaskId send, int gpu, std::size_t producer) {
  const auto& ops = ops_[idx(gpu)];
  const PipeOpKind kind = ops[producer].op.kind;
  for (std::size_t next = producer + 1; next < ops.size(); ++next) {
    if (!same_handles(ops[next].op.kind, kind))
      continue;
    // A backward merged with the forward before it (plan.moe_a2a_overlap)
    // waits at its last piece, as gate_next does.
    if (overlaps_previous(0, plan_.pp_rank_of(gpu), next))
      graph_.depend(send, ops[next].pieces.back().first);
    else
      gate(send, gpu, next);
    return;
  }
  if (kind != PipeOpKind::forward && producer + 1 == ops.size())
    last_[idx(gpu)] = send;
}

}  // namespace trainsim::workloads::detail
