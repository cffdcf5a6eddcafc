// Expert loads of model.moe.routing (workloads/expert_routing.hpp) against
// closed forms: Zipf shares are r^-s / H(E, s) laid over the experts by a
// permutation, Dirichlet draws average 1 / E and tighten as alpha grows,
// measured tables normalise, the same seed draws the same loads, and EP
// ranks add up their experts' shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "workloads/expert_routing.hpp"
#include "workloads/model_spec.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec moe_model(int layers, int experts, RoutingSpec routing) {
  ModelSpec m = *find_model_preset("mixtral-8x7b");
  m.layers = layers;
  m.moe.experts = experts;
  m.moe.top_k = 2;
  m.moe.routing = std::move(routing);
  return m;
}

RoutingSpec drawn(RoutingKind kind, double skew, std::uint64_t seed) {
  RoutingSpec r;
  r.kind = kind;
  r.skew = skew;
  r.seed = seed;
  return r;
}

double harmonic(int n, double s) {
  double h = 0;
  for (int r = 1; r <= n; ++r)
    h += std::pow(r, -s);
  return h;
}

TEST(ExpertRouting, ZipfSharesAreInverseRankPowersOverTheGeneralisedHarmonicNumber) {
  const auto w = zipf_shares(8, 1.0);
  ASSERT_EQ(w.size(), 8u);
  for (int r = 1; r <= 8; ++r)
    EXPECT_NEAR(w[static_cast<std::size_t>(r - 1)], 1.0 / (r * harmonic(8, 1.0)), 1e-15) << r;
  // s = 0 is balanced.
  for (double x : zipf_shares(16, 1e-12))
    EXPECT_NEAR(x, 1.0 / 16, 1e-12);
}

TEST(ExpertRouting, ZipfLayersPermuteTheSameSharesOverTheExperts) {
  const ModelSpec m = moe_model(6, 64, drawn(RoutingKind::zipf, 1.2, 42));
  const auto loads = expert_loads(m);
  const auto expected = zipf_shares(64, 1.2);
  std::set<std::size_t> hottest;
  for (int l = 0; l < 6; ++l) {
    auto share = loads.of_layer(l);
    hottest.insert(static_cast<std::size_t>(std::max_element(share.begin(), share.end()) - share.begin()));
    std::sort(share.begin(), share.end(), std::greater<>());
    for (std::size_t k = 0; k < share.size(); ++k)
      EXPECT_DOUBLE_EQ(share[k], expected[k]) << "layer " << l;
  }
  // The hot expert moves from layer to layer.
  EXPECT_GT(hottest.size(), 1u);
}

TEST(ExpertRouting, TheSameSeedDrawsTheSameLoadsAnotherSeedOthers) {
  for (RoutingKind kind : {RoutingKind::zipf, RoutingKind::dirichlet}) {
    const ModelSpec a = moe_model(4, 32, drawn(kind, 0.8, 7));
    const ModelSpec b = moe_model(4, 32, drawn(kind, 0.8, 8));
    EXPECT_EQ(expert_loads(a).share, expert_loads(a).share);
    EXPECT_NE(expert_loads(a).share, expert_loads(b).share);
  }
}

TEST(ExpertRouting, DirichletSharesAverageOneOverEAndTightenWithAlpha) {
  const int experts = 16, layers = 400;
  auto spread = [&](double alpha) {
    const auto loads = expert_loads(moe_model(layers, experts, drawn(RoutingKind::dirichlet, alpha, 3)));
    double mean = 0, var = 0;
    for (const auto& share : loads.share) {
      EXPECT_NEAR(std::accumulate(share.begin(), share.end(), 0.0), 1.0, 1e-12);
      for (double x : share) {
        mean += x;
        var += (x - 1.0 / experts) * (x - 1.0 / experts);
      }
    }
    const double n = double(layers) * experts;
    EXPECT_NEAR(mean / n, 1.0 / experts, 1e-12);
    return var / n;
  };
  // A symmetric Dirichlet's variance per share: (E - 1) / (E^2 (E alpha + 1)).
  for (double alpha : {0.5, 1.0, 4.0}) {
    const double closed = (experts - 1.0) / (double(experts) * experts * (experts * alpha + 1));
    EXPECT_NEAR(spread(alpha) / closed, 1.0, 0.1) << "alpha " << alpha;
  }
}

TEST(ExpertRouting, MeasuredTablesNormalisePerLayerWithAllAsTheDefaultRow) {
  RoutingSpec r;
  r.kind = RoutingKind::measured;
  r.measured = {{.layer = -1, .tokens = {1, 1, 1, 1}}, {.layer = 2, .tokens = {6, 2, 0, 0}}};
  const auto loads = expert_loads(moe_model(4, 4, r));
  EXPECT_EQ(loads.of_layer(0), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(loads.of_layer(2), (std::vector<double>{0.75, 0.25, 0, 0}));
  // EP 2: rank 0 holds experts 0 and 1.
  EXPECT_EQ(rank_load_factors(loads.of_layer(2), 2), (std::vector<double>{2.0, 0.0}));
  EXPECT_EQ(rank_load_factors(loads.of_layer(2), 4), (std::vector<double>{3.0, 1.0, 0.0, 0.0}));
}

TEST(ExpertRouting, FiguresGiveTheBusiestRankAndTheCopiesAboveCapacity) {
  RoutingSpec r;
  r.kind = RoutingKind::measured;
  r.measured = {{.layer = -1, .tokens = {3, 1}}};
  ModelSpec m = moe_model(2, 2, r);
  auto fig = routing_figures(m, 2);
  EXPECT_DOUBLE_EQ(fig.busiest_rank_factor, 1.5);
  EXPECT_DOUBLE_EQ(fig.mean_busiest_rank_factor, 1.5);
  EXPECT_DOUBLE_EQ(fig.busiest_expert_factor, 1.5);
  EXPECT_DOUBLE_EQ(fig.dropped_fraction, 0);  // dropless
  // Capacity 1: each expert takes at most half the copies; 0.75 - 0.5 of them dropped.
  m.moe.dropless = false;
  m.moe.capacity_factor = 1.0;
  EXPECT_DOUBLE_EQ(routing_figures(m, 2).dropped_fraction, 0.25);
  // Balanced routing is the identity.
  fig = routing_figures(moe_model(2, 8, {}), 4);
  EXPECT_DOUBLE_EQ(fig.busiest_rank_factor, 1);
  EXPECT_DOUBLE_EQ(fig.busiest_expert_factor, 1);
}

TEST(ExpertRouting, MtpModulesGetTheirOwnLoads) {
  ModelSpec m = moe_model(3, 8, drawn(RoutingKind::zipf, 1, 1));
  m.mtp_depth = 1;
  const auto loads = expert_loads(m);
  ASSERT_EQ(loads.share.size(), 4u);
  EXPECT_EQ(loads.of_layer(3).size(), 8u);
}

}  // namespace
}  // namespace trainsim::workloads
