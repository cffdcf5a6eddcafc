#include "workloads/expert_routing.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "platforms/uniform_draw.hpp"
#include "workloads/model_spec.hpp"

namespace trainsim::workloads {
namespace {

using platforms::uniform01;

// A standard normal by Box-Muller (1 - u avoids log 0).
double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng);
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Gamma(alpha, 1): Marsaglia and Tsang (2000) for alpha >= 1; for alpha < 1
// Gamma(alpha + 1) x U^(1 / alpha) (their Section 6).
double gamma(double alpha, std::mt19937_64& rng) {
  if (alpha < 1) {
    const double u = 1.0 - uniform01(rng);
    return gamma(alpha + 1, rng) * std::pow(u, 1.0 / alpha);
  }
  const double d = alpha - 1.0 / 3, c = 1.0 / std::sqrt(9 * d);
  for (;;) {
    const double x = standard_normal(rng);
    const double v = std::pow(1 + c * x, 3);
    if (v <= 0)
      continue;
    const double u = 1.0 - uniform01(rng);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v))
      return d * v;
  }
}

// A uniformly random permutation of 0..n-1 (Fisher-Yates).
std::vector<int> permutation(int n, std::mt19937_64& rng) {
  std::vector<int> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    p[static_cast<std::size_t>(i)] = i;
  for (int i = n - 1; i > 0; --i) {
    const int j = std::min(i, static_cast<int>(uniform01(rng) * (i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

std::vector<double> normalised(std::vector<double> w) {
  double sum = 0;
  for (double x : w)
    sum += x;
  if (sum <= 0)
    throw std::logic_error("expert loads with no tokens (the reader refuses such a layer)");
  for (double& x : w)
    x /= sum;
  return w;
}

std::vector<double> draw_layer(const RoutingSpec& r, int experts, std::mt19937_64& rng) {
  switch (r.kind) {
    case RoutingKind::balanced:
    case RoutingKind::measured:
      break;
    case RoutingKind::zipf: {
      const std::vector<double> by_rank = zipf_shares(experts, r.skew);
      const std::vector<int> order = permutation(experts, rng);
      std::vector<double> share(static_cast<std::size_t>(experts));
      for (int k = 0; k < experts; ++k)
        share[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] =
            by_rank[static_cast<std::size_t>(k)];
      return share;
    }
    case RoutingKind::dirichlet: {
      std::vector<double> g(static_cast<std::size_t>(experts));
      double sum = 0;
      for (double& x : g)
        sum += x = gamma(r.skew, rng);
      if (sum <= 0) {  // every draw underflowed (alpha near 0): the limit, one expert takes all
        g.assign(g.size(), 0.0);
        g[static_cast<std::size_t>(permutation(experts, rng).front())] = 1;
      }
      return normalised(std::move(g));
    }
  }
  return std::vector<double>(static_cast<std::size_t>(experts), 1.0 / experts);
}

const MeasuredLayerLoads* measured_row(const RoutingSpec& r, int layer) {
  const MeasuredLayerLoads* any = nullptr;
  for (const auto& row : r.measured) {
    if (row.layer == layer)
      return &row;
    if (row.layer < 0)
      any = &row;
  }
  return any;
}

}  // namespace

std::string_view to_string(RoutingKind kind) {
  switch (kind) {
    case RoutingKind::balanced:
      return "balanced";
    case RoutingKind::zipf:
      return "zipf";
    case RoutingKind::dirichlet:
      return "dirichlet";
    case RoutingKind::measured:
      return "measured";
  }
  return "?";
}

std::vector<double> zipf_shares(int experts, double s) {
  std::vector<double> w(static_cast<std::size_t>(experts));
  for (int r = 0; r < experts; ++r)
    w[static_cast<std::size_t>(r)] = std::pow(r + 1.0, -s);
  return normalised(std::move(w));
}

ExpertLoads expert_loads(const ModelSpec& model) {
  const auto& moe = model.moe;
  const RoutingSpec& r = moe.routing;
  ExpertLoads loads;
  const int total = model.layers + model.mtp_depth;
  loads.share.resize(static_cast<std::size_t>(std::max(total, 0)));
  if (!model.is_moe())
    return loads;
  // One stream for the whole model, the layers in order: a layer's draw
  // does not depend on anything but the seed and the layers before it.
  std::mt19937_64 rng(r.seed ^ 0x6d6f652d726f7574ULL);  // "moe-rout"
  for (int l = 0; l < total; ++l) {
    const bool moe_layer = l < model.layers ? model.is_moe_layer(l) : model.mtp_layers_are_moe();
    if (!moe_layer)
      continue;
    auto& share = loads.share[static_cast<std::size_t>(l)];
    if (r.kind == RoutingKind::measured) {
      const MeasuredLayerLoads* row = measured_row(r, l);
      if (row == nullptr || static_cast<int>(row->tokens.size()) != moe.experts)
        throw std::logic_error("measured expert loads missing a MoE layer (the reader checks coverage)");
      share = normalised(row->tokens);
    } else {
      share = draw_layer(r, moe.experts, rng);
    }
  }
  return loads;
}

std::vector<double> rank_load_factors(const std::vector<double>& share, int ep) {
  const int experts = static_cast<int>(share.size());
  std::vector<double> f(static_cast<std::size_t>(ep), 0.0);
  if (ep <= 0 || experts % ep != 0)
    return f;
  const int local = experts / ep;
  for (int e = 0; e < experts; ++e)
    f[static_cast<std::size_t>(e / local)] += share[static_cast<std::size_t>(e)];
  for (double& x : f)
    x *= ep;
  return f;
}

RoutingFigures routing_figures(const ModelSpec& model, int ep) {
  RoutingFigures fig;
  if (!model.is_moe())
    return fig;
  const ExpertLoads loads = expert_loads(model);
  const double experts = model.moe.experts;
  double layers = 0, busiest_sum = 0, dropped_sum = 0;
  fig.busiest_expert_factor = fig.busiest_rank_factor = 0;
  for (const auto& share : loads.share) {
    if (share.empty())
      continue;
    ++layers;
    fig.busiest_expert_factor =
        std::max(fig.busiest_expert_factor, *std::max_element(share.begin(), share.end()) * experts);
    const auto f = rank_load_factors(share, ep);
    const double busiest = f.empty() ? 1.0 : *std::max_element(f.begin(), f.end());
    fig.busiest_rank_factor = std::max(fig.busiest_rank_factor, busiest);
    busiest_sum += busiest;
    if (!model.moe.dropless) {
      const double capacity = model.moe.capacity_factor / experts;
      for (double s : share)
        dropped_sum += std::max(0.0, s - capacity);
    }
  }
  if (layers > 0) {
    fig.mean_busiest_rank_factor = busiest_sum / layers;
    fig.dropped_fraction = dropped_sum / layers;
  }
  return fig;
}

}  // namespace trainsim::workloads
