#include "workloads/planning/merged_step_estimate.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>

#include "workloads/expert_parallel.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

OpCost op_cost(const CostModel& cost, PipeOpKind kind, const StageSlice& slice,
               const platforms::GpuSpec& gpu) {
  switch (kind) {
    case PipeOpKind::forward:
      return cost.forward(slice, gpu);
    case PipeOpKind::backward:
      return cost.backward(slice, gpu);
    case PipeOpKind::backward_input:
      return cost.backward_input(slice, gpu);
    case PipeOpKind::backward_weight:
      return cost.backward_weight(slice, gpu);
  }
  return {};
}

// One op's progress through its pieces.
struct Chain {
  const MergedOp* op = nullptr;
  std::size_t next = 0;     // the next piece to compute
  double ready_s = kNever;  // when it may start (kNever: waiting)
  bool done = false;
};

// Communication in flight: a tail (its own links, fixed time) or an
// all-to-all (shares the EP group's links with the other in flight).
struct Flight {
  int chain = 0;
  double remaining_s = 0;  // uncontended seconds left
  bool shared = false;
  bool tail = false;  // the op's TP collectives, before its last all-to-all
};

}  // namespace

double merged_step_s(const MergedOp& forward, const MergedOp& backward, double compute_interference) {
  std::array<Chain, 2> chains{Chain{.op = &forward, .ready_s = 0}, Chain{.op = &backward}};
  std::vector<Flight> flights;
  double now = 0;
  int running = -1;         // the chain whose piece the GPU runs
  double compute_left = 0;  // its seconds of work left at full speed

  // The piece `c` just finished (computing, or its communication): what
  // follows it on its chain.
  const auto advance = [&](int c) {
    Chain& chain = chains[static_cast<std::size_t>(c)];
    if (chain.next == chain.op->pieces.size())
      chain.done = true;
    else
      chain.ready_s = now;
  };
  const auto start_a2a_or_advance = [&](int c) {
    const Chain& chain = chains[static_cast<std::size_t>(c)];
    const double a2a = chain.op->pieces[chain.next - 1].a2a_s;
    if (a2a > 0)
      flights.push_back({.chain = c, .remaining_s = a2a, .shared = true, .tail = false});
    else
      advance(c);
  };
  const auto piece_done = [&](int c) {
    const Chain& chain = chains[static_cast<std::size_t>(c)];
    if (c == 0 && chain.next == 1)
      chains[1].ready_s = now;  // the backward follows the forward's first piece
    if (chain.next == chain.op->pieces.size() && chain.op->tail_s > 0)
      flights.push_back({.chain = c, .remaining_s = chain.op->tail_s, .shared = false, .tail = true});
    else
      start_a2a_or_advance(c);
  };

  while (!chains[1].done) {
    if (running < 0) {
      // The earliest ready piece; the backward's last waits for the
      // forward's end.
      int pick = -1;
      for (int c = 0; c < 2; ++c) {
        const Chain& chain = chains[static_cast<std::size_t>(c)];
        if (chain.done || chain.ready_s > now)
          continue;
        if (c == 1 && chain.next + 1 == chain.op->pieces.size() && !chains[0].done)
          continue;
        if (pick < 0 || chain.ready_s < chains[static_cast<std::size_t>(pick)].ready_s)
          pick = c;
      }
      if (pick >= 0) {
        Chain& chain = chains[static_cast<std::size_t>(pick)];
        running = pick;
        compute_left = chain.op->pieces[chain.next].compute_s;
        chain.ready_s = kNever;
        ++chain.next;
        continue;  // a zero-length piece ends at once
      }
    }
    const double sharing = static_cast<double>(
        std::count_if(flights.begin(), flights.end(), [](const Flight& f) { return f.shared; }));
    // Compute runs slowed while the GPU communicates.
    const double speed = flights.empty() ? 1.0 : 1.0 - compute_interference;
    double next_s = running >= 0 ? now + compute_left / speed : kNever;
    for (const Flight& f : flights)
      next_s = std::min(next_s, now + f.remaining_s * (f.shared ? sharing : 1.0));
    if (next_s == kNever)
      break;  // nothing left to run (not reached for well-formed ops)
    const double dt = next_s - now;
    now = next_s;
    // Flights ending now (within rounding) complete; the others progress.
    std::vector<Flight> ended;
    for (auto it = flights.begin(); it != flights.end();) {
      const double rate = it->shared ? 1.0 / sharing : 1.0;
      it->remaining_s -= dt * rate;
      if (it->remaining_s <= 1e-12 * std::max(1.0, now)) {
        ended.push_back(*it);
        it = flights.erase(it);
      } else {
        ++it;
      }
    }
    if (running >= 0) {
      compute_left -= dt * speed;
      if (compute_left <= 1e-12 * std::max(1.0, now)) {
        const int c = running;
        running = -1;
        piece_done(c);
      }
    }
    for (const Flight& f : ended) {
      if (f.tail)
        start_a2a_or_advance(f.chain);
      else
        advance(f.chain);
    }
  }
  return now;
}

MergedOp merged_op(const ModelSpec& model, const ParallelPlan& plan, const CostModel& cost,
                   const platforms::GpuSpec& gpu, const StageSlice& slice, PipeOpKind kind,
                   const ExpertExchangeEstimate& exchange, const RoutingSkewEstimate& skew, double tail_s) {
  MergedOp op;
  op.tail_s = tail_s;
  const double whole = op_cost(cost, kind, slice, gpu).duration_s / plan.cp;
  const auto a2a_s = [&](const StageSlice& piece) {
    return skew.pass_pair_s(exchange, piece) * ep_all_to_alls(plan, kind, moe_layers_of(model, piece)) / 2.0;
  };
  if (slice.layers == 0) {
    op.pieces.push_back({whole + skew.extra_compute_s(kind, slice, cost, gpu) / plan.cp, a2a_s(slice)});
    return op;
  }
  double sum = 0;
  std::vector<double> extra;
  for (int l = 0; l < slice.layers; ++l) {
    const StageSlice piece{.layers = 1,
                           .first_layer = slice.first_layer + l,
                           .embedding = slice.embedding && l == 0,
                           .logits = slice.logits && l == slice.layers - 1};
    const double share = op_cost(cost, kind, piece, gpu).duration_s;
    op.pieces.push_back({share, a2a_s(piece)});
    extra.push_back(skew.extra_compute_s(kind, piece, cost, gpu) / plan.cp);
    sum += share;
  }
  for (std::size_t i = 0; i < op.pieces.size(); ++i) {
    auto& p = op.pieces[i];
    p.compute_s = (sum > 0 ? whole * p.compute_s / sum : 0) + extra[i];
  }
  if (kind != PipeOpKind::forward)
    std::reverse(op.pieces.begin(), op.pieces.end());
  return op;
}

}  // namespace trainsim::workloads
