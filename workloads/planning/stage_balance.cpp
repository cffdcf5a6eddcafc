#include "workloads/planning/stage_balance.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "workloads/context_parallel.hpp"
#include "workloads/schedule.hpp"
#include "workloads/stage_slices.hpp"

namespace trainsim::workloads {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// A candidate must beat the incumbent by more than this fraction.
constexpr double kStrictGain = 1e-9;

// The TP all-reduces of one micro-batch's forward and backward through `layers`
// layers on `gpu`'s TP group (2 per layer each way, 2 more in the backward
// with full recomputation; sequence parallelism moves the same volume), as
// rings over the group's NVLink (its NIC when the group spans NVLink
// domains), plus
// one launch per op: they sit on the critical path of every op, and a slower
// NVLink (A100 against H100) makes a stage slower.
double tp_communication_s(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, int gpu, int layers) {
  if (plan.tp <= 1 || layers == 0)
    return 0;
  const auto& group = cluster.group_of(gpu);
  const auto& link = plan.tp <= group.gpus_per_domain() ? group.nvlink : group.nic;
  if (link.effective_Bps() <= 0)
    return 0;
  const double ring = 2.0 * (plan.tp - 1) / plan.tp * tp_allreduce_bytes(model, plan) / link.effective_Bps();
  // recompute selective_op's two repeated all-gathers a layer: one
  // all-reduce's worth.
  const int all_reduces = (plan.recompute == Recompute::full           ? 6
                           : plan.recompute == Recompute::selective_op ? 5
                                                                       : 4) *
                          layers;
  const int launches = plan.sequence_parallel ? 4 : 2;
  return all_reduces * ring + launches * (cluster.collectives.launch_latency_s + link.latency_s);
}

// t(vs, d, l) for every virtual stage, replica and layer count: compute on
// the stage's slowest GPU plus its TP communication.
class StageCosts {
 public:
  StageCosts(const ModelSpec& model, const ParallelPlan& plan, const platforms::ClusterSpec& cluster,
             const CostModel& cost)
      : plan_(plan),
        layers_(model.layers),
        stages_(plan.pp * plan.virtual_stages),
        layout_{.ranks = plan.pp,
                .micro_batches = 1,
                .chunks = plan.virtual_stages,
                .placement = placement_of(plan.schedule),
                .per_rank = {},
                .evictions = {}} {
    const ContextParallelCost per_gpu(cost, plan.cp);
    const CostModel& c = plan.cp > 1 ? static_cast<const CostModel&>(per_gpu) : cost;
    std::map<std::tuple<std::string, bool, bool, int>, double> cache;
    times_.assign(static_cast<std::size_t>(stages_ * plan.dp),
                  std::vector<double>(static_cast<std::size_t>(layers_ + 1), 0.0));
    for (int d = 0; d < plan.dp; ++d) {
      std::vector<std::string> signature;
      for (int vs = 0; vs < stages_; ++vs) {
        auto& row = times_[index(vs, d)];
        const int rank = layout_.rank_of(vs);
        for (int l = min_layers(vs); l <= layers_; ++l) {
          const StageSlice slice{.layers = l, .embedding = vs == 0, .logits = vs == stages_ - 1};
          double slowest = 0;
          for (int cp = 0; cp < plan.cp; ++cp)
            for (int tp = 0; tp < plan.tp; ++tp) {
              const auto& gpu = cluster.gpu_of(plan.gpu_of(rank, d, tp, cp));
              if (l == min_layers(vs))
                signature.push_back(gpu.name);
              const auto key = std::make_tuple(gpu.name, slice.embedding, slice.logits, l);
              auto it = cache.find(key);
              if (it == cache.end())
                it = cache.emplace(key, c.forward(slice, gpu).duration_s + c.backward(slice, gpu).duration_s)
                         .first;
              slowest = std::max(slowest, it->second + tp_communication_s(model, plan, cluster,
                                                                          plan.gpu_of(rank, d, tp, cp), l));
            }
          row[static_cast<std::size_t>(l)] = slowest;
        }
      }
      signatures_.push_back(signature);
    }
  }

  double t(int vs, int d, int layers) const { return times_[index(vs, d)][static_cast<std::size_t>(layers)]; }
  // The fewest layers virtual stage vs may hold: 0 for the first and the
  // last, which hold the embedding / the output layer and loss (Llama 3's
  // and Megatron's layouts), 1 for the others.
  int min_layers(int vs) const { return stages_ > 1 && (vs == 0 || vs == stages_ - 1) ? 0 : 1; }
  int stages() const { return stages_; }
  int layers() const { return layers_; }
  const ParallelPlan& plan() const { return plan_; }
  // Do the replicas run on different GPU types (stage by stage)?
  bool replicas_differ() const {
    return std::any_of(signatures_.begin(), signatures_.end(),
                       [&](const auto& s) { return s != signatures_.front(); });
  }

  // T(d) for a partition: fill-and-drain plus (m - 1) x the slowest rank.
  double replica_time(const std::vector<int>& stage_layers, int d, int m) const {
    std::vector<double> rank_load(static_cast<std::size_t>(plan_.pp), 0.0);
    double pass = 0;
    for (int vs = 0; vs < stages_; ++vs) {
      const double time = t(vs, d, stage_layers[static_cast<std::size_t>(vs)]);
      pass += time;
      rank_load[static_cast<std::size_t>(layout_.rank_of(vs))] += time;
    }
    return pass + (m - 1) * *std::max_element(rank_load.begin(), rank_load.end());
  }
  double estimate(const std::vector<int>& stage_layers, const std::vector<int>& shares) const {
    double worst = 0;
    for (int d = 0; d < plan_.dp; ++d)
      worst = std::max(worst, replica_time(stage_layers, d, shares[static_cast<std::size_t>(d)]));
    return worst;
  }

 private:
  std::size_t index(int vs, int d) const { return static_cast<std::size_t>(d * stages_ + vs); }

  const ParallelPlan& plan_;
  int layers_, stages_;
  PipelineSchedule layout_;
  std::vector<std::vector<double>> times_;
  std::vector<std::vector<std::string>> signatures_;
};

// The contiguous split minimising max over vs of cost(vs, l), then the sum.
std::vector<int> best_partition(const StageCosts& costs, const std::vector<int>& shares,
                                const std::vector<int>& caps) {
  const int stages = costs.stages(), layers = costs.layers();
  auto stage_cost = [&](int vs, int l) {
    if (!caps.empty() && l > caps[static_cast<std::size_t>(vs)])
      return kInfinity;
    double worst = 0;
    for (std::size_t d = 0; d < shares.size(); ++d)
      worst = std::max(worst, shares[d] * costs.t(vs, static_cast<int>(d), l));
    return worst;
  };
  // best[s][n]: (max, sum) over the first s stages holding n layers;
  // choice[s][n]: the layers of stage s - 1. Pass 1 minimises the max; pass
  // 2 the sum among splits whose every stage stays within that max.
  auto solve = [&](double bound, bool minimise_sum) {
    const auto rows = static_cast<std::size_t>(stages + 1), cols = static_cast<std::size_t>(layers + 1);
    std::vector<std::vector<double>> best(rows, std::vector<double>(cols, kInfinity));
    std::vector<std::vector<int>> choice(rows, std::vector<int>(cols, 0));
    // least[s]: the fewest layers the first s stages may hold.
    std::vector<int> least(static_cast<std::size_t>(stages + 1), 0);
    for (int s = 1; s <= stages; ++s)
      least[static_cast<std::size_t>(s)] = least[static_cast<std::size_t>(s - 1)] + costs.min_layers(s - 1);
    const int all_least = least[static_cast<std::size_t>(stages)];
    best[0][0] = 0;
    for (int s = 1; s <= stages; ++s)
      for (int n = least[static_cast<std::size_t>(s)];
           n <= layers - (all_least - least[static_cast<std::size_t>(s)]); ++n)
        for (int l = costs.min_layers(s - 1); l <= n - least[static_cast<std::size_t>(s - 1)]; ++l) {
          const double previous = best[static_cast<std::size_t>(s - 1)][static_cast<std::size_t>(n - l)];
          if (previous == kInfinity)
            continue;
          const double c = stage_cost(s - 1, l);
          if (c == kInfinity || (minimise_sum && c > bound))
            continue;
          const double value = minimise_sum ? previous + c : std::max(previous, c);
          auto& cell = best[static_cast<std::size_t>(s)][static_cast<std::size_t>(n)];
          if (value < cell) {  // strict: ties keep the earlier (smaller) l
            cell = value;
            choice[static_cast<std::size_t>(s)][static_cast<std::size_t>(n)] = l;
          }
        }
    std::vector<int> split(static_cast<std::size_t>(stages), 0);
    const double result = best[static_cast<std::size_t>(stages)][static_cast<std::size_t>(layers)];
    if (result == kInfinity)
      return std::make_pair(result, split);
    for (int s = stages, n = layers; s > 0; --s) {
      const int l = choice[static_cast<std::size_t>(s)][static_cast<std::size_t>(n)];
      split[static_cast<std::size_t>(s - 1)] = l;
      n -= l;
    }
    return std::make_pair(result, split);
  };
  const auto [bottleneck, first] = solve(kInfinity, false);
  if (bottleneck == kInfinity)
    return {};
  const auto [sum, second] = solve(bottleneck * (1 + 1e-12), true);
  return sum == kInfinity ? first : second;
}

// Micro-batches per replica for a partition: unit by unit to the replica
// whose time grows least.
std::vector<int> best_shares(const StageCosts& costs, const std::vector<int>& stage_layers,
                             const std::vector<int>& even) {
  const ParallelPlan& plan = costs.plan();
  const int total = plan.global_batch_size / plan.micro_batch_size;
  int unit = 1, least = 1;
  const ScheduleTraits& traits = traits_of(plan.schedule);
  if (traits.micro_batches_in_groups_of_pp)
    unit = least = plan.pp;
  if (traits.min_micro_batches_per_stage > 0)
    least = traits.min_micro_batches_per_stage * plan.pp;
  if (least * plan.dp > total || (total - least * plan.dp) % unit != 0)
    return even;
  std::vector<int> shares(static_cast<std::size_t>(plan.dp), least);
  for (int left = total - least * plan.dp; left > 0; left -= unit) {
    int pick = 0;
    double pick_time = kInfinity;
    for (int d = 0; d < plan.dp; ++d) {
      const double time = costs.replica_time(stage_layers, d, shares[static_cast<std::size_t>(d)] + unit);
      if (time < pick_time) {
        pick_time = time;
        pick = d;
      }
    }
    shares[static_cast<std::size_t>(pick)] += unit;
  }
  return shares;
}

StagePartition describe(const StageCosts& costs, std::vector<int> stage_layers, std::vector<int> shares) {
  StagePartition p;
  p.estimated_iteration_s = costs.estimate(stage_layers, shares);
  for (int vs = 0; vs < costs.stages(); ++vs) {
    double slowest = 0;
    for (int d = 0; d < costs.plan().dp; ++d)
      slowest = std::max(slowest, costs.t(vs, d, stage_layers[static_cast<std::size_t>(vs)]));
    p.stage_compute_s.push_back(slowest);
  }
  p.stage_layers = std::move(stage_layers);
  p.dp_micro_batches = std::move(shares);
  return p;
}

void check_even_plan(const ModelSpec& model, const ParallelPlan& plan) {
  const int stages = plan.pp * plan.virtual_stages;
  if (!plan.stage_layers.empty() || !plan.dp_micro_batches.empty())
    throw std::invalid_argument("balance_stages takes the even plan (no stage_layers, no dp_micro_batches)");
  if (stages <= 0 || model.layers % stages != 0 || plan.dp <= 0 || plan.micro_batch_size <= 0 ||
      plan.global_batch_size % (plan.micro_batch_size * plan.dp) != 0)
    throw std::invalid_argument("balance_stages needs a plan whose even split is valid");
}

}  // namespace

double estimate_iteration_s(const ModelSpec& model, const ParallelPlan& plan,
                            const platforms::ClusterSpec& cluster, const CostModel& cost,
                            const std::vector<int>& stage_layers, const std::vector<int>& dp_micro_batches) {
  ParallelPlan even = plan;
  even.stage_layers.clear();
  even.dp_micro_batches.clear();
  return StageCosts(model, even, cluster, cost).estimate(stage_layers, dp_micro_batches);
}

BalanceResult balance_stages(const ModelSpec& model, const ParallelPlan& plan,
                             const platforms::ClusterSpec& cluster, const CostModel& cost,
                             const std::vector<int>& max_stage_layers) {
  check_even_plan(model, plan);
  const StageCosts costs(model, plan, cluster, cost);
  const int stages = costs.stages();
  const std::vector<int> even_layers(static_cast<std::size_t>(stages), model.layers / stages);
  const std::vector<int> even_shares(static_cast<std::size_t>(plan.dp), plan.micro_batches());

  BalanceResult result;
  result.even = describe(costs, even_layers, even_shares);
  result.balanced = result.even;
  // Uneven shares need ZeRO 0 or 1 (sim/scenario/plan_partition.cpp).
  result.searched_dp_shares = costs.replicas_differ() && plan.dp > 1 && plan.zero_stage <= 1;

  std::vector<int> shares = even_shares, layers;
  for (int round = 0; round < 8; ++round) {
    std::vector<int> next_layers = best_partition(costs, shares, max_stage_layers);
    if (next_layers.empty())
      break;  // the caps leave no split
    std::vector<int> next_shares =
        result.searched_dp_shares ? best_shares(costs, next_layers, even_shares) : shares;
    const bool fixed = next_layers == layers && next_shares == shares;
    layers = std::move(next_layers);
    shares = std::move(next_shares);
    const double estimate = costs.estimate(layers, shares);
    if (estimate < result.balanced.estimated_iteration_s * (1 - kStrictGain))
      result.balanced = describe(costs, layers, shares);
    if (fixed)
      break;
  }
  return result;
}

}  // namespace trainsim::workloads
