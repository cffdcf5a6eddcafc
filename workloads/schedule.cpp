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

const std::vector<ScheduleTraits>& schedule_table() {
  static const std::vector<ScheduleTraits> table = [] {
    std::vector<ScheduleTraits> t{gpipe_traits(), one_f_one_b_traits(), interleaved_one_f_one_b_traits(),
                                  zb_h1_traits(), zb_h2_traits(),       zb_v_traits(),
                                  bpipe_traits(), dualpipe_v_traits(),  dualpipe_traits()};
    for (std::size_t i = 0; i < t.size(); ++i)
      if (static_cast<std::size_t>(t[i].kind) != i)
        throw std::logic_error("schedule_table: entries out of ScheduleKind order");
    return t;
  }();
  return table;
}

const ScheduleTraits& traits_of(ScheduleKind kind) {
  return schedule_table().at(static_cast<std::size_t>(kind));
}

std::string_view to_string(ScheduleKind kind) {
  return traits_of(kind).name;
}

std::string schedule_names() {
  std::string names;
  for (const auto& t : schedule_table())
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

PipelineSchedule make_schedule(ScheduleKind kind, int ranks, int micro_batches,
                               const ScheduleOptions& options) {
  return traits_of(kind).make(ranks, micro_batches, options);
}

P2pMode resolved_p2p(const ParallelPlan& plan) {
  return plan.p2p == P2pMode::automatic ? traits_of(plan.schedule).p2p : plan.p2p;
}

ChunkPlacement placement_of(ScheduleKind kind) {
  return traits_of(kind).placement;
}

int default_virtual_stages(ScheduleKind kind) {
  switch (traits_of(kind).chunks) {
    case ChunksPerRank::one:
      return 1;
    case ChunksPerRank::two:
      return 2;
    case ChunksPerRank::several:
      return 0;  // must be given
  }
  return 1;
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

  const ScheduleTraits& traits = traits_of(plan.schedule);
  switch (traits.chunks) {
    case ChunksPerRank::several:
      if (v < 2)
        problems.push_back(
            {"virtual_stages",
             fmt::format("{} with schedule {}; expected an integer >= 2 (model chunks per GPU; with "
                         "one chunk use schedule 1f1b)",
                         v, name)});
      break;
    case ChunksPerRank::two:
      if (v != 2)
        problems.push_back(
            {"virtual_stages", fmt::format("{} with schedule {}; expected 2 (a V-shaped schedule puts "
                                           "exactly two model chunks on each GPU), or leave it out",
                                           v, name)});
      break;
    case ChunksPerRank::one:
      if (v != 1) {
        std::vector<std::string> several;
        for (const auto& t : schedule_table())
          if (t.chunks != ChunksPerRank::one)
            several.emplace_back(t.name);
        std::string list;
        for (std::size_t i = 0; i < several.size(); ++i)
          list += (i == 0 ? "" : i + 1 == several.size() ? " and " : ", ") + several[i];
        problems.push_back({"virtual_stages", fmt::format("{} with schedule {}; expected 1 (only {} run "
                                                          "several model chunks per GPU)",
                                                          v, name, list)});
      }
      break;
  }
  // Megatron-LM: microbatch_group_size_per_vp_stage (= pp) must lie in
  // [pp, m] and divide m unless the last group still has >= pp
  // micro-batches, which with a group of pp means m is a multiple of pp.
  if (traits.micro_batches_in_groups_of_pp && v >= 2)
    for (const Share& share : shares)
      if (share.m > 0 && share.m % p != 0)
        problems.push_back(
            {batch_key,
             uneven ? fmt::format("schedule {} runs micro-batches in groups of pp = {} (Megatron-LM's rule), "
                                  "but {}, not a multiple of {}; expected every entry a multiple of {}",
                                  name, p, share.text, p, p)
                    : fmt::format("schedule {} runs micro-batches in groups of pp = {} (Megatron-LM's rule), "
                                  "but {} is not a multiple of {}; expected global_batch_size a multiple of "
                                  "pp x micro_batch_size x dp = {}",
                                  name, p, share.text, p, p * per_pipeline)});
  if (const int k = traits.min_micro_batches_per_stage; k > 0)
    for (const Share& share : shares)
      if (share.m > 0 && share.m < k * p)
        problems.push_back(
            {batch_key,
             uneven ? fmt::format("schedule {} needs at least {} x pp = {} micro-batches per pipeline "
                                  "(DualPipe's rule), but {}; expected every entry >= {}",
                                  name, k, k * p, share.text, k * p)
                    : fmt::format("schedule {} needs at least {} x pp = {} micro-batches per pipeline "
                                  "(DualPipe's rule), but {}; expected global_batch_size >= {}",
                                  name, k, k * p, share.text, k * p * per_pipeline)});
  // DualPipe (dualpipe.py, DualPipe.step): "assert num_ranks % 2 == 0" and
  // "num_chunks % 2 == 0": the two directions split the ranks and the
  // micro-batches in halves.
  if (traits.placement == ChunkPlacement::bidirectional) {
    if (p % 2 != 0)
      problems.push_back(
          {"pp", fmt::format("{} with schedule {}, which runs two pipelines in opposite directions over "
                             "halves of the ranks; expected an even pp (DualPipe's rule; dualpipe_v runs on "
                             "any pp)",
                             p, name)});
    for (const Share& share : shares)
      if (share.m > 0 && share.m % 2 != 0)
        problems.push_back(
            {batch_key,
             uneven
                 ? fmt::format("schedule {} feeds half of the micro-batches from each end of the pipeline, "
                               "but {}, which is odd; expected every entry even",
                               name, share.text)
                 : fmt::format("schedule {} feeds half of the micro-batches from each end of the pipeline, "
                               "but {}, which is odd; expected global_batch_size a multiple of 2 x "
                               "micro_batch_size x dp = {}",
                               name, share.text, 2 * per_pipeline)});
  }
  if (plan.p2p == P2pMode::sync && !traits.sync_p2p) {
    std::string sync;
    for (const auto& t : schedule_table())
      if (t.sync_p2p)
        sync += (sync.empty() ? "" : ", ") + std::string(t.name);
    problems.push_back(
        {"p2p", fmt::format("sync with schedule {}, whose ranks would wait on each other's blocking send / "
                            "receive pairs for ever (or whose paired ops run overlapped); expected p2p: "
                            "async, or a schedule that pairs them ({})",
                            name, sync)});
  }
  if (plan.p2p == P2pMode::overlap && !traits.overlap_p2p) {
    std::string overlap;
    for (const auto& t : schedule_table())
      if (t.overlap_p2p)
        overlap += (overlap.empty() ? "" : ", ") + std::string(t.name);
    problems.push_back(
        {"p2p", fmt::format("overlap with schedule {}: Megatron's overlap_p2p_comm pairing exists for "
                            "its interleaved loop only; expected p2p: sync or async, or schedule {}",
                            name, overlap)});
  }
  if (!plan.stage_layers.empty())
    return problems;  // an explicit partition need not be even
  // DualPipe's two chunks per GPU are two copies of the model's pp stages:
  // the layers need only divide by pp (plan_checks.cpp says so for every
  // schedule).
  if (traits.placement != ChunkPlacement::bidirectional && v > 1 && p > 0 && layers % (p * v) != 0)
    problems.push_back(
        {"virtual_stages",
         fmt::format("model.layers = {} is not divisible by pp x virtual_stages = {} x {} = {}; "
                     "expected each of the {} virtual stages to get the same number of layers",
                     layers, p, v, p * v, p * v)});
  return problems;
}

}  // namespace trainsim::workloads
