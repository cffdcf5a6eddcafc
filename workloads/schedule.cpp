#include "workloads/schedule.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <stdexcept>

namespace trainsim::workloads {

std::string to_string(const std::vector<PipeOp>& ops, int chunks) {
  std::string out;
  for (const auto& op : ops) {
    char letter = 'F';
    switch (op.kind) {
      case PipeOpKind::forward:
        letter = 'F';
        break;
      case PipeOpKind::backward:
        letter = 'B';
        break;
      case PipeOpKind::backward_input:
        letter = 'I';
        break;
      case PipeOpKind::backward_weight:
        letter = 'W';
        break;
    }
    if (!out.empty())
      out += ' ';
    out += chunks > 1 ? fmt::format("{}{}.{}", letter, op.micro_batch, op.chunk)
                      : fmt::format("{}{}", letter, op.micro_batch);
  }
  return out;
}

PipelineSchedule make_schedule(ScheduleKind kind, int ranks, int micro_batches,
                               const ScheduleOptions& options) {
  switch (kind) {
    case ScheduleKind::gpipe:
      return make_gpipe(ranks, micro_batches);
    case ScheduleKind::one_f_one_b:
      return make_one_f_one_b(ranks, micro_batches);
    case ScheduleKind::interleaved_one_f_one_b:
      return make_interleaved_one_f_one_b(ranks, micro_batches, options.virtual_stages,
                                          options.microbatch_group);
    case ScheduleKind::zb_h1:
      return make_zb_h1(ranks, micro_batches);
    case ScheduleKind::zb_h2:
      return make_zb_h2(ranks, micro_batches);
    case ScheduleKind::zb_v:
      return make_zb_v(ranks, micro_batches, options.zbv);
    case ScheduleKind::bpipe:
      return make_bpipe(ranks, micro_batches);
    case ScheduleKind::dualpipe_v:
      return make_dualpipe_v(ranks, micro_batches);
  }
  throw std::logic_error("unhandled schedule kind");
}

ChunkPlacement placement_of(ScheduleKind kind) {
  return kind == ScheduleKind::zb_v || kind == ScheduleKind::dualpipe_v ? ChunkPlacement::v_shape
                                                                        : ChunkPlacement::looped;
}

int default_virtual_stages(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::interleaved_one_f_one_b:
      return 0;
    case ScheduleKind::zb_v:
    case ScheduleKind::dualpipe_v:
      return 2;
    default:
      return 1;
  }
}

std::vector<ScheduleProblem> schedule_problems(const ParallelPlan& plan, int layers) {
  std::vector<ScheduleProblem> problems;
  const int p = plan.pp;
  const int v = plan.virtual_stages;
  const std::string name(to_string(plan.schedule));
  // The micro-batch rules apply to every replica's count: the even share,
  // or each entry of dp_micro_batches (reported at that key).
  struct Share {
    int m = 0;
    std::string text;  // how m came about
  };
  std::vector<Share> shares;
  const bool uneven = !plan.dp_micro_batches.empty();
  if (uneven) {
    for (std::size_t d = 0; d < plan.dp_micro_batches.size(); ++d) {
      const int m = plan.dp_micro_batches[d];
      const bool seen = std::any_of(shares.begin(), shares.end(), [&](const Share& s) { return s.m == m; });
      if (!seen)
        shares.push_back({m, fmt::format("replica {} runs m = {}", d, m)});
    }
  } else {
    const int m = plan.micro_batch_size > 0 && plan.dp > 0 ? plan.micro_batches() : 0;
    shares.push_back({m, fmt::format("m = global_batch_size / (micro_batch_size x dp) = {} / ({} x {}) = {}",
                                     plan.global_batch_size, plan.micro_batch_size, plan.dp, m)});
  }
  const std::string batch_key = uneven ? "dp_micro_batches" : "global_batch_size";
  const int per_pipeline = plan.micro_batch_size * plan.dp;

  switch (plan.schedule) {
    case ScheduleKind::interleaved_one_f_one_b:
      if (v < 2) {
        problems.push_back(
            {"virtual_stages",
             fmt::format("{} with schedule {}; expected an integer >= 2 (model chunks per GPU; with "
                         "one chunk use schedule 1f1b)",
                         v, name)});
        break;
      }
      // Megatron-LM: microbatch_group_size_per_vp_stage (= pp) must lie in
      // [pp, m] and divide m unless the last group still has >= pp
      // micro-batches, which with a group of pp means m is a multiple of pp.
      for (const Share& share : shares)
        if (share.m > 0 && share.m % p != 0)
          problems.push_back(
              {batch_key,
               uneven
                   ? fmt::format("schedule {} runs micro-batches in groups of pp = {} (Megatron-LM's rule), "
                                 "but {}, not a multiple of {}; expected every entry a multiple of {}",
                                 name, p, share.text, p, p)
                   : fmt::format("schedule {} runs micro-batches in groups of pp = {} (Megatron-LM's rule), "
                                 "but {} is not a multiple of {}; expected global_batch_size a multiple of "
                                 "pp x micro_batch_size x dp = {}",
                                 name, p, share.text, p, p * per_pipeline)});
      break;
    case ScheduleKind::zb_v:
    case ScheduleKind::dualpipe_v:
      if (v != 2)
        problems.push_back(
            {"virtual_stages", fmt::format("{} with schedule {}; expected 2 (a V-shaped schedule puts "
                                           "exactly two model chunks on each GPU), or leave it out",
                                           v, name)});
      if (plan.schedule == ScheduleKind::dualpipe_v)
        for (const Share& share : shares)
          if (share.m > 0 && share.m < 2 * p)
            problems.push_back(
                {batch_key,
                 uneven ? fmt::format("schedule {} needs at least 2 x pp = {} micro-batches per pipeline "
                                      "(DualPipe's rule), but {}; expected every entry >= {}",
                                      name, 2 * p, share.text, 2 * p)
                        : fmt::format("schedule {} needs at least 2 x pp = {} micro-batches per pipeline "
                                      "(DualPipe's rule), but {}; expected global_batch_size >= {}",
                                      name, 2 * p, share.text, 2 * p * per_pipeline)});
      break;
    default:
      if (v != 1)
        problems.push_back(
            {"virtual_stages", fmt::format("{} with schedule {}; expected 1 (only interleaved_1f1b, zb_v and "
                                           "dualpipe_v run several model chunks per GPU)",
                                           v, name)});
      break;
  }
  if (!plan.stage_layers.empty())
    return problems;  // an explicit partition need not be even
  if (v > 1 && p > 0 && layers % (p * v) != 0)
    problems.push_back(
        {"virtual_stages",
         fmt::format("model.layers = {} is not divisible by pp x virtual_stages = {} x {} = {}; "
                     "expected each of the {} virtual stages to get the same number of layers",
                     layers, p, v, p * v, p * v)});
  return problems;
}

}  // namespace trainsim::workloads
