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
  // What the piece just computed still waits for before the next may
  // start: its communication (tail, all-to-all) and its deferred weight
  // gradient, one each.
  int waiting = 0;
  double deferred_ready_s = kNever;  // when the deferred weight gradient may run (kNever: none)
};

// Communication in flight: a tail (its own links, fixed time) or an
// all-to-all (shares the EP group's links with the other in flight).
struct Flight {
  int chain = 0;
  double remaining_s = 0;  // uncontended seconds left
  bool shared = false;
  bool tail = false;  // the op's TP collectives, before its last all-to-all
};

// What the GPU computes: a chain's next piece, or the weight gradient its
// last piece deferred.
struct Job {
  int chain = -1;  // -1: idle
  bool deferred = false;
};

// The list schedule of merged_step_s; an empty forward leaves the backward
// alone (lone_backward_s).
double list_schedule_s(const MergedOp& forward, const MergedOp& backward, double compute_interference) {
  std::array<Chain, 2> chains{Chain{.op = &forward, .ready_s = 0}, Chain{.op = &backward}};
  if (forward.pieces.empty()) {
    chains[0].done = true;
    chains[1].ready_s = 0;
  }
  std::vector<Flight> flights;
  double now = 0;
  Job running;              // what the GPU runs
  double compute_left = 0;  // its seconds of work left at full speed

  // The piece `c` computed last has nothing left to wait for: what follows
  // it on its chain.
  const auto advance = [&](int c) {
    Chain& chain = chains[static_cast<std::size_t>(c)];
    if (chain.next == chain.op->pieces.size())
      chain.done = true;
    else
      chain.ready_s = now;
  };
  const auto part_done = [&](int c) {
    if (--chains[static_cast<std::size_t>(c)].waiting == 0)
      advance(c);
  };
  const auto start_a2a_or_finish = [&](int c) {
    const Chain& chain = chains[static_cast<std::size_t>(c)];
    const double a2a = chain.op->pieces[chain.next - 1].a2a_s;
    if (a2a > 0)
      flights.push_back({.chain = c, .remaining_s = a2a, .shared = true, .tail = false});
    else
      part_done(c);
  };
  const auto piece_done = [&](int c) {
    Chain& chain = chains[static_cast<std::size_t>(c)];
    if (c == 0 && chain.next == 1)
      chains[1].ready_s = now;  // the backward follows the forward's first piece
    const bool defers = chain.op->pieces[chain.next - 1].deferred_s > 0;
    chain.waiting = defers ? 2 : 1;
    if (defers)
      chain.deferred_ready_s = now;  // beside the piece's communication
    if (chain.next == chain.op->pieces.size() && chain.op->tail_s > 0)
      flights.push_back({.chain = c, .remaining_s = chain.op->tail_s, .shared = false, .tail = true});
    else
      start_a2a_or_finish(c);
  };

  while (!chains[1].done) {
    if (running.chain < 0) {
      // The earliest ready piece or deferred weight gradient (the forward's
      // on a tie); the backward's last piece waits for the forward's end.
      Job pick;
      double pick_ready = kNever;
      for (int c = 0; c < 2; ++c) {
        const Chain& chain = chains[static_cast<std::size_t>(c)];
        if (chain.done)
          continue;
        const bool waits_for_forward = c == 1 && chain.next + 1 == chain.op->pieces.size() && !chains[0].done;
        if (chain.ready_s <= now && !waits_for_forward && (pick.chain < 0 || chain.ready_s < pick_ready)) {
          pick = {.chain = c, .deferred = false};
          pick_ready = chain.ready_s;
        }
        if (chain.deferred_ready_s <= now && (pick.chain < 0 || chain.deferred_ready_s < pick_ready)) {
          pick = {.chain = c, .deferred = true};
          pick_ready = chain.deferred_ready_s;
        }
      }
      if (pick.chain >= 0) {
        Chain& chain = chains[static_cast<std::size_t>(pick.chain)];
        running = pick;
        if (pick.deferred) {
          compute_left = chain.op->pieces[chain.next - 1].deferred_s;
          chain.deferred_ready_s = kNever;
        } else {
          compute_left = chain.op->pieces[chain.next].compute_s;
          chain.ready_s = kNever;
          ++chain.next;
        }
        continue;  // a zero-length piece ends at once
      }
    }
    const double sharing = static_cast<double>(
        std::count_if(flights.begin(), flights.end(), [](const Flight& f) { return f.shared; }));
    // Compute runs slowed while the GPU communicates.
    const double speed = flights.empty() ? 1.0 : 1.0 - compute_interference;
    double next_s = running.chain >= 0 ? now + compute_left / speed : kNever;
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
    if (running.chain >= 0) {
      compute_left -= dt * speed;
      if (compute_left <= 1e-12 * std::max(1.0, now)) {
        const Job job = running;
        running = {};
        if (job.deferred)
          part_done(job.chain);
        else
          piece_done(job.chain);
      }
    }
    for (const Flight& f : ended) {
      if (f.tail)
        start_a2a_or_finish(f.chain);
      else
        part_done(f.chain);
    }
  }
  return now;
}

}  // namespace

bool defers_weight_gradients(const ModelSpec& model, const ParallelPlan& plan) {
  return plan.delay_wgrad_compute && plan.moe_a2a_overlap && plan.ep > 1 && model.is_moe();
}

double merged_step_s(const MergedOp& forward, const MergedOp& backward, double compute_interference) {
  return list_schedule_s(forward, backward, compute_interference);
}

double lone_backward_s(const MergedOp& backward, double compute_interference) {
  return list_schedule_s(MergedOp{}, backward, compute_interference);
}

double serial_op_s(const MergedOp& op) {
  double sum = op.tail_s;
  for (const auto& piece : op.pieces)
    sum += piece.compute_s + piece.deferred_s + piece.a2a_s;
  return sum;
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
  std::vector<StageSlice> layer_slices;
  if (slice.layers == 0) {
    op.pieces.push_back({whole + skew.extra_compute_s(kind, slice, cost, gpu) / plan.cp, a2a_s(slice)});
    layer_slices.push_back(slice);
  } else {
    double sum = 0;
    std::vector<double> extra;
    for (int l = 0; l < slice.layers; ++l) {
      const StageSlice piece{.layers = 1,
                             .first_layer = slice.first_layer + l,
                             .embedding = slice.embedding && l == 0,
                             .logits = slice.logits && l == slice.layers - 1};
      layer_slices.push_back(piece);
      const double share = op_cost(cost, kind, piece, gpu).duration_s;
      op.pieces.push_back({share, a2a_s(piece)});
      extra.push_back(skew.extra_compute_s(kind, piece, cost, gpu) / plan.cp);
      sum += share;
    }
    for (std::size_t i = 0; i < op.pieces.size(); ++i) {
      auto& p = op.pieces[i];
      p.compute_s = (sum > 0 ? whole * p.compute_s / sum : 0) + extra[i];
    }
  }
  // plan.delay_wgrad_compute: a MoE layer's backward piece computes its
  // input gradient, then its weight gradient beside its all-to-all: the
  // cost model's backward_weight share of the piece (the skewed experts'
  // extra included), as the replay splits it (deferred_weight_gradients.cpp).
  if (kind == PipeOpKind::backward && defers_weight_gradients(model, plan))
    for (std::size_t i = 0; i < op.pieces.size(); ++i) {
      const StageSlice& piece = layer_slices[i];
      if (moe_layers_of(model, piece) == 0)
        continue;
      const double b = cost.backward(piece, gpu).duration_s;
      const double share =
          b > 0 ? std::clamp(cost.backward_weight(piece, gpu).duration_s / b, 0.0, 1.0) : 0.0;
      auto& p = op.pieces[i];
      p.deferred_s = p.compute_s * share;
      p.compute_s -= p.deferred_s;
    }
  if (kind != PipeOpKind::forward)
    std::reverse(op.pieces.begin(), op.pieces.end());
  return op;
}

}  // namespace trainsim::workloads
