#include "workloads/skewed_touch.hpp"

#include <algorithm>
#include <cstdint>
#include <random>

#include "platforms/uniform_draw.hpp"
#include "workloads/group_limited_routing.hpp"

namespace trainsim::workloads {
namespace {

using platforms::uniform01;

int touch_draw_index(int n, std::mt19937_64& rng) {
  return std::min(n - 1, static_cast<int>(uniform01(rng) * n));
}

// One item among `candidates` (those with ok(i)), in proportion to
// weight[i]; uniformly when their weights are all 0. -1 when none.
template <typename Ok>
int touch_pick_linear(const std::vector<double>& weight, int count, Ok ok, std::mt19937_64& rng) {
  double total = 0;
  int open = 0;
  for (int i = 0; i < count; ++i)
    if (ok(i)) {
      total += weight[static_cast<std::size_t>(i)];
      ++open;
    }
  if (open == 0)
    return -1;
  if (total > 0) {
    double u = uniform01(rng) * total;
    int last = -1;
    for (int i = 0; i < count; ++i)
      if (ok(i) && weight[static_cast<std::size_t>(i)] > 0) {
        last = i;
        u -= weight[static_cast<std::size_t>(i)];
        if (u < 0)
          return i;
      }
    return last;  // rounding at the top end
  }
  int k = touch_draw_index(open, rng);
  for (int i = 0; i < count; ++i)
    if (ok(i) && k-- == 0)
      return i;
  return -1;
}

class TouchSampler {
 public:
  TouchSampler(const MoeSpec& moe, int ep, const EpNodes& nodes, const std::vector<double>& share)
      : moe_(moe),
        share_(share),
        experts_(static_cast<int>(share.size())),
        per_rank_(experts_ / ep),
        per_node_(per_rank_ * nodes.ranks_per_node),
        nodes_(nodes.nodes),
        m_(nodes_per_token(moe, nodes)),
        groups_bind_(group_limit_binds(moe, nodes)),
        rng_(0x736b65772d746f75ULL) {  // "skew-tou"
    cumulative_.resize(share_.size());
    double sum = 0;
    for (std::size_t e = 0; e < share_.size(); ++e)
      cumulative_[e] = sum += share_[e];
    node_weight_.assign(static_cast<std::size_t>(nodes_), 0.0);
    for (int e = 0; e < experts_; ++e)
      node_weight_[static_cast<std::size_t>(e / per_node_)] += share_[static_cast<std::size_t>(e)];
    if (groups_bind_) {
      group_experts_ = moe.experts / moe.router_num_groups;
      group_weight_.assign(static_cast<std::size_t>(moe.router_num_groups), 0.0);
      for (int e = 0; e < experts_; ++e)
        group_weight_[static_cast<std::size_t>(e / group_experts_)] += share_[static_cast<std::size_t>(e)];
    }
    taken_.assign(share_.size(), 0);
    node_open_.assign(static_cast<std::size_t>(nodes_), 0);
    group_taken_.assign(group_weight_.size(), 0);
    rank_seen_.assign(static_cast<std::size_t>(ep), 0);
    node_seen_.assign(static_cast<std::size_t>(nodes_), 0);
    result_.rank.assign(static_cast<std::size_t>(ep), 0.0);
    result_.node.assign(static_cast<std::size_t>(nodes_), 0.0);
  }

  TouchProbabilities run(int samples) {
    for (int t = 1; t <= samples; ++t)
      token(t);
    for (double& p : result_.rank)
      p /= samples;
    for (double& p : result_.node)
      p /= samples;
    return result_;
  }

 private:
  // Stamps: an entry equal to the token's number is set for that token.
  bool open_node(int e) const {
    return m_ >= nodes_ || node_open_[static_cast<std::size_t>(e / per_node_)] == stamp_;
  }
  bool untaken(int e) const { return taken_[static_cast<std::size_t>(e)] != stamp_; }

  void take(int e) {
    taken_[static_cast<std::size_t>(e)] = stamp_;
    const auto r = static_cast<std::size_t>(e / per_rank_), n = static_cast<std::size_t>(e / per_node_);
    if (rank_seen_[r] != stamp_) {
      rank_seen_[r] = stamp_;
      result_.rank[r] += 1;
    }
    if (node_seen_[n] != stamp_) {
      node_seen_[n] = stamp_;
      result_.node[n] += 1;
    }
  }

  // The next expert among those the token may still take, in proportion to
  // its share: rejection from the shares of [lo, hi) (exact: a draw
  // conditioned on landing in the allowed set), then a scan if that keeps
  // missing.
  // The draws are over the experts [lo, hi) (a group's, or all), which
  // hold every expert ok() may accept.
  template <typename Ok>
  int next_expert(int lo, int hi, Ok ok) {
    const auto first = cumulative_.begin() + lo, last = cumulative_.begin() + hi;
    const double base = lo > 0 ? cumulative_[static_cast<std::size_t>(lo - 1)] : 0.0;
    const double total = cumulative_[static_cast<std::size_t>(hi - 1)] - base;
    if (total > 0)
      for (int attempt = 0; attempt < 64; ++attempt) {
        const double u = base + uniform01(rng_) * total;
        const auto it = std::upper_bound(first, last, u);
        if (it == last)
          continue;
        const int e = static_cast<int>(it - cumulative_.begin());
        if (share_[static_cast<std::size_t>(e)] > 0 && ok(e))
          return e;
      }
    return touch_pick_linear(share_, experts_, ok, rng_);
  }

  void token(int t) {
    stamp_ = t;
    if (m_ < nodes_)
      for (int k = 0; k < m_; ++k) {
        const int n = touch_pick_linear(
            node_weight_, nodes_, [&](int i) { return node_open_[static_cast<std::size_t>(i)] != stamp_; },
            rng_);
        node_open_[static_cast<std::size_t>(n)] = stamp_;
      }
    if (!groups_bind_) {
      for (int k = 0; k < moe_.top_k; ++k) {
        const int e = next_expert(0, experts_, [&](int x) { return untaken(x) && open_node(x); });
        if (e < 0)
          break;
        take(e);
      }
      return;
    }
    // The groups the token may choose: those of its nodes (whole groups per
    // node under a node limit, group_layout_problems).
    const int groups = static_cast<int>(group_weight_.size());
    const auto group_open = [&](int g) {
      return group_taken_[static_cast<std::size_t>(g)] != stamp_ && open_node(g * group_experts_);
    };
    int universe = 0;
    for (int g = 0; g < groups; ++g)
      universe += open_node(g * group_experts_) ? 1 : 0;
    const int chosen = std::min(moe_.router_group_topk, universe);
    chosen_.clear();
    for (int k = 0; k < chosen; ++k) {
      const int g = touch_pick_linear(group_weight_, groups, group_open, rng_);
      group_taken_[static_cast<std::size_t>(g)] = stamp_;
      chosen_.push_back(g);
    }
    // r of the chosen groups (uniformly) take one expert more.
    const int q = moe_.top_k / chosen, r = moe_.top_k % chosen;
    for (int k = 0; k < r; ++k)
      std::swap(chosen_[static_cast<std::size_t>(k)],
                chosen_[static_cast<std::size_t>(k + touch_draw_index(chosen - k, rng_))]);
    for (int k = 0; k < chosen; ++k) {
      const int g = chosen_[static_cast<std::size_t>(k)];
      const int quota = q + (k < r ? 1 : 0);
      for (int j = 0; j < quota; ++j) {
        const int e = next_expert(g * group_experts_, (g + 1) * group_experts_,
                                  [&](int x) { return untaken(x) && x / group_experts_ == g; });
        if (e < 0)
          break;
        take(e);
      }
    }
  }

  const MoeSpec& moe_;
  const std::vector<double>& share_;
  int experts_, per_rank_, per_node_, nodes_, m_;
  bool groups_bind_;
  int group_experts_ = 1;
  std::mt19937_64 rng_;
  std::vector<double> cumulative_, node_weight_, group_weight_;
  std::vector<int> taken_, node_open_, group_taken_, rank_seen_, node_seen_, chosen_;
  int stamp_ = 0;
  TouchProbabilities result_;
};

}  // namespace

TouchProbabilities skewed_touch_probabilities(const MoeSpec& moe, int ep, const EpNodes& nodes,
                                              const std::vector<double>& share, int samples) {
  return TouchSampler(moe, ep, nodes, share).run(samples);
}

}  // namespace trainsim::workloads
