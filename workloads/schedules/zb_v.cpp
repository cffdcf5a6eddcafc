// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", V-shape schedule):
// two chunks per rank in a V (rank r holds virtual stages r and 2p - 1 - r),
// the backward split into I (input gradient) and W (weight gradient), about
// no bubble at 1F1B's activation memory.
//
// Ported from the reference's own generator, sail-sg/
// zero-bubble-pipeline-parallelism megatron/core/pipeline_parallel/
// zerobubble/scheduler/zbv.py (PipelineGraph.try_v_schedule and
// create_schedule): a greedy list scheduler that simulates the pipeline with
// given F, B, W and transfer times, places W passes in the bubbles, caps
// memory at 2p forwards' worth of activations (1F1B's p micro-batches), then
// retries while the worst stage bubble shrinks, and keeps the best of four
// fill policies. Its per-stage order is the schedule; the times it simulates
// are discarded (trainsim replays the order on the real platform).
// Internally a phase-0 backward is the backward of the second (upper) chunk:
// backwards walk the V from its end.
#include <algorithm>
#include <array>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>

#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

// cat: 0 F, 1 B, 2 W; chunk: the phase (for B and W, 0 is the upper chunk).
struct Node {
  int cat;
  int chunk;
  int micro;
};

struct Attempt {
  std::vector<std::vector<Node>> schedule;
  double max_bubble = 0;
};

class VGraph {
 public:
  VGraph(int stages, int micro, const ZbvInputs& in)
      : stages_(stages),
        micro_(micro),
        cost_{in.forward_s, in.backward_input_s, in.backward_weight_s},
        mem_{in.forward_memory, in.backward_memory(), in.weight_memory},
        comm_(in.comm_s),
        max_mem_(in.forward_memory * stages * 2),
        nodes_(6 * stages * micro) {}

  Attempt best() {
    std::optional<Attempt> best;
    for (bool fill_b : {true, false})
      for (bool fill_f : {true, false}) {
        Attempt a = try_v(fill_f, fill_b, nullptr);
        if (!best || a.max_bubble < best->max_bubble)
          best = std::move(a);
      }
    return std::move(*best);
  }

 private:
  int id(int cat, int chunk, int stage, int micro) const {
    return cat * 2 * stages_ * micro_ + chunk * stages_ * micro_ + stage * micro_ + micro;
  }

  // State of one greedy pass.
  struct Pass {
    std::vector<std::array<int, 6>> count;
    std::vector<double> end_time, cur_time, mem, stage_bubble;
    std::vector<std::deque<std::pair<int, int>>> pending_w;  // (chunk, micro)
    std::vector<std::vector<Node>> schedule;
    std::vector<double> approved;
    double max_approved = -1;
  };

  // end_time[-1] in the reference: Python reads the last node when a
  // dependency id is -1 (the first stage of a chain); kept for fidelity.
  double end_of(const Pass& s, int node) const {
    return node >= 0 ? s.end_time[static_cast<std::size_t>(node)] : s.end_time.back();
  }

  double max_stage_bubble(const Pass& s, int stage = -1) const {
    double m = 0;
    for (double b : s.stage_bubble)
      m = std::max(m, b);
    if (stage >= 0)
      m = std::max(m, s.max_approved - s.approved[static_cast<std::size_t>(stage)]);
    return m;
  }

  static void check(bool ok, const char* what) {
    if (!ok)
      throw std::logic_error(std::string("ZB-V generator: ") + what);
  }

  void put(Pass& s, int cat, int chunk, int stage) {
    const auto st = static_cast<std::size_t>(stage);
    const double no_bubble = s.cur_time[st] + cost_[cat];
    double tmp = no_bubble;
    const int cnt = s.count[st][static_cast<std::size_t>(cat * 2 + chunk)];
    check(cnt < micro_, "too many ops of one kind");
    check(s.mem[st] + mem_[cat] <= max_mem_, "memory cap exceeded");
    if (cat > 0 || chunk > 0) {
      const int last = cat * 2 + chunk - 1;
      if (cat < 2)
        check(end_of(s, id(last / 2, last % 2, stage, cnt)) >= 0, "op before its predecessor on the stage");
      else
        check(end_of(s, id(1, chunk, stage, cnt)) >= 0, "W before its B");
    }
    if (chunk == 1 && cat < 2 && stage < stages_ - 1) {
      const int fa = id(cat, chunk, stage + 1, cnt);
      check(end_of(s, fa) >= 0, "op before its upstream op");
      tmp = std::max(tmp, end_of(s, fa) + comm_ + cost_[cat]);
    }
    if (chunk == 0 && cat < 2 && stage > 0) {
      const int fa = id(cat, chunk, stage - 1, cnt);
      check(end_of(s, fa) >= 0, "op before its upstream op");
      tmp = std::max(tmp, end_of(s, fa) + comm_ + cost_[cat]);
    }
    const int node = id(cat, chunk, stage, cnt);
    if (s.count[st][0] > 0)
      s.stage_bubble[st] += tmp - no_bubble;
    s.end_time[static_cast<std::size_t>(node)] = tmp;
    s.cur_time[st] = tmp;
    s.mem[st] += mem_[cat];
    s.schedule[st].push_back({cat, chunk, cnt});
    if (cat == 1)
      s.pending_w[st].emplace_back(chunk, cnt);
    ++s.count[st][static_cast<std::size_t>(cat * 2 + chunk)];
  }

  void put_w(Pass& s, int stage) {
    auto& q = s.pending_w[static_cast<std::size_t>(stage)];
    check(!q.empty(), "W with nothing pending");
    const int chunk = q.front().first;
    q.pop_front();
    put(s, 2, chunk, stage);
  }

  Attempt try_v(bool fill_f, bool fill_b, const std::vector<double>* approved_bubble) {
    const int S = stages_, M = micro_;
    Pass s;
    s.count.assign(static_cast<std::size_t>(S), {0, 0, 0, 0, 0, 0});
    s.end_time.assign(static_cast<std::size_t>(nodes_), -1.0);
    s.cur_time.assign(static_cast<std::size_t>(S), 0.0);
    s.mem.assign(static_cast<std::size_t>(S), 0.0);
    s.stage_bubble.assign(static_cast<std::size_t>(S), 0.0);
    s.pending_w.resize(static_cast<std::size_t>(S));
    s.schedule.resize(static_cast<std::size_t>(S));
    s.approved = approved_bubble ? *approved_bubble : std::vector<double>(static_cast<std::size_t>(S), -1.0);
    s.max_approved = *std::max_element(s.approved.begin(), s.approved.end());
    auto count = [&](int stage, int k) {
      return s.count[static_cast<std::size_t>(stage)][static_cast<std::size_t>(k)];
    };
    auto cur = [&](int stage) { return s.cur_time[static_cast<std::size_t>(stage)]; };
    auto mem = [&](int stage) { return s.mem[static_cast<std::size_t>(stage)]; };
    auto pending = [&](int stage) { return !s.pending_w[static_cast<std::size_t>(stage)].empty(); };

    // Warm-up: the first forward of chunk 0 everywhere, then enough chunk-0
    // forwards on the lower stages to cover the wait for chunk 1.
    for (int i = 0; i < S; ++i)
      put(s, 0, 0, i);
    for (int i = S - 1; i >= 0; --i) {
      if (i == S - 1) {
        put(s, 0, 1, i);
        continue;
      }
      const double tmp = end_of(s, id(0, 1, i + 1, 0)) + comm_;
      while (mem(i) + mem_[0] * (2 + i * 2) <= max_mem_ && cur(i) + cost_[0] <= tmp && count(i, 0) < M)
        for (int j = 0; j <= i; ++j)
          put(s, 0, 0, j);
      put(s, 0, 1, i);
    }
    int iter_chunk = 0;
    for (int i = 1; i < S; ++i) {
      while (count(i, 0) + count(i, 1) < count(i - 1, 0) + count(i - 1, 1) ||
             (count(i, 1) <= count(i - 1, 1) && count(i - 1, 1) < M)) {
        for (int j = S - 1; j >= i; --j)
          if (count(j, iter_chunk) < M)
            put(s, 0, iter_chunk, j);
        iter_chunk = 1 - iter_chunk;
      }
    }

    for (int round = 0; round < 2 * M; ++round) {
      // One B per stage and round, W first where memory requires it.
      for (int i = 0; i < S; ++i)
        while (mem(i) + mem_[1] > max_mem_)
          put_w(s, i);
      std::vector<int> b0_ranks, b1_ranks;
      for (int i = 0; i < S; ++i) {
        if (count(i, 3) >= count(i, 2)) {
          b0_ranks.push_back(i);
        } else if (i == S - 1) {
          b1_ranks.push_back(i);
        } else {
          const int fa = id(1, 1, i + 1, count(i, 3));
          if (end_of(s, fa) >= 0 || count(i, 2) >= M)
            b1_ranks.push_back(i);
          else
            b0_ranks.push_back(i);
        }
      }
      std::vector<std::pair<int, int>> b_ranks;
      for (auto it = b1_ranks.rbegin(); it != b1_ranks.rend(); ++it)
        b_ranks.emplace_back(*it, 1);
      for (int i : b0_ranks)
        b_ranks.emplace_back(i, 0);
      for (const auto& [i, chunk] : b_ranks) {
        int fa = -1;
        if (chunk == 1 && i < S - 1)
          fa = id(1, 1, i + 1, count(i, 3));
        if (chunk == 0 && i > 0)
          fa = id(1, 0, i - 1, count(i, 2));
        while (pending(i) && fa >= 0 && end_of(s, fa) + comm_ >= cur(i) + cost_[2])
          put_w(s, i);  // fill the bubble
        if (pending(i) && end_of(s, fa) + comm_ - cur(i) >
                              max_stage_bubble(s, i) - s.stage_bubble[static_cast<std::size_t>(i)]) {
          if (chunk == 1 || fill_b)
            put_w(s, i);
        }
        put(s, 1, chunk, i);
      }

      // One F per stage and round where its input is ready.
      for (int i = 0; i < S; ++i) {
        if (count(i, 1) >= M)
          continue;
        int item = -1;
        if (count(i, 1) >= count(i, 0)) {
          item = 0;
        } else if (i == S - 1) {
          item = 1;
        } else if (end_of(s, id(0, 1, i + 1, count(i, 1))) >= 0) {
          item = 1;
        } else if (count(i, 0) < M) {
          if (i == 0 || end_of(s, id(0, 0, i - 1, count(i, 0))) >= 0)
            item = 0;
        }
        if (item < 0)
          continue;
        while (mem(i) + mem_[0] > max_mem_)
          put_w(s, i);
        int fa = -1;
        if (item == 0 && i > 0)
          fa = id(0, 0, i - 1, count(i, 0));
        if (item == 1 && i < S - 1)
          fa = id(0, 1, i + 1, count(i, 1));
        while (pending(i) && fa >= 0 && end_of(s, fa) + comm_ >= cur(i) + cost_[2])
          put_w(s, i);  // fill the bubble
        if (pending(i) && end_of(s, fa) + comm_ - cur(i) >
                              max_stage_bubble(s, i) - s.stage_bubble[static_cast<std::size_t>(i)]) {
          if (fill_f)
            put_w(s, i);
        }
        put(s, 0, item, i);
      }
    }
    for (int i = 0; i < S; ++i)
      while (pending(i))
        put_w(s, i);

    Attempt attempt{std::move(s.schedule), max_stage_bubble(s)};
    if (s.max_approved < 0 || attempt.max_bubble < s.max_approved) {
      Attempt retry = try_v(fill_f, fill_b, &s.stage_bubble);
      if (retry.max_bubble < attempt.max_bubble)
        return retry;
    }
    return attempt;
  }

  int stages_, micro_;
  std::array<double, 3> cost_, mem_;
  double comm_, max_mem_;
  int nodes_;
};

}  // namespace

PipelineSchedule make_zb_v(int ranks, int micro_batches, const ZbvInputs& inputs) {
  const int p = ranks, m = micro_batches;
  if (p < 1 || m < 1)
    throw std::invalid_argument("ZB-V needs at least one rank and one micro-batch");
  if (!(inputs.forward_memory > 0))
    throw std::invalid_argument("ZB-V: the forward's activation memory must be positive");
  PipelineSchedule schedule{.ranks = p,
                            .micro_batches = m,
                            .chunks = 2,
                            .placement = ChunkPlacement::v_shape,
                            .per_rank = {},
                            .evictions = {}};
  const Attempt best = VGraph(p, m, inputs).best();
  schedule.per_rank.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    for (const Node& n : best.schedule[static_cast<std::size_t>(r)]) {
      // create_schedule: a forward's phase is its chunk; a backward's or a
      // weight pass's phase counts from the top of the V.
      const int chunk = n.cat == 0 ? n.chunk : 1 - n.chunk;
      const PipeOpKind kind = n.cat == 0   ? PipeOpKind::forward
                              : n.cat == 1 ? PipeOpKind::backward_input
                                           : PipeOpKind::backward_weight;
      schedule.per_rank[static_cast<std::size_t>(r)].push_back({kind, n.micro, chunk});
    }
  return schedule;
}

ScheduleTraits zb_v_traits() {
  return {.kind = ScheduleKind::zb_v,
          .name = "zb_v",
          .chunks = ChunksPerRank::two,
          .placement = ChunkPlacement::v_shape,
          .micro_batches_in_groups_of_pp = false,
          .min_micro_batches_per_stage = 0,
          .bubble = BubbleModel::zero_bubble_h2,
          .evicts_activations = false,
          .searched_by_default = false,
          .balances_measured_costs = true,
          .p2p = P2pMode::async,
          .sync_p2p = false,
          .overlap_p2p = false,
          .marks_pairs = false,
          .make = [](int ranks, int micro_batches, const ScheduleOptions& options) {
            return make_zb_v(ranks, micro_batches, options.zbv);
          }};
}

}  // namespace trainsim::workloads
