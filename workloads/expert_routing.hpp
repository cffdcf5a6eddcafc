#pragma once
// How a MoE layer's router spreads token copies over its experts
// (model.moe.routing), and what that does to the GPUs of an EP group.
//
//   balanced   every expert gets top_k x tokens / experts copies (trainsim's
//              assumption before routing existed, and Megatron-Bridge's
//              force-balanced benchmark rows)
//   zipf       per MoE layer, the expert of rank r (1-based) gets a share
//              proportional to r^-s (s = routing_skew > 0), the ranks laid
//              over the experts by a seeded random permutation, so that the
//              hot experts differ from layer to layer
//   dirichlet  per MoE layer, shares drawn from a symmetric Dirichlet of
//              concentration alpha = routing_skew > 0 (small alpha: skewed;
//              alpha -> infinity: balanced), seeded
//   measured   tokens per expert and layer read from a CSV file (format in
//              docs/moe.md, "Routing imbalance"), normalised per layer
//
// The draws use std::mt19937_64 (bit-exact by the standard) and explicit
// distribution code, so one seed gives the same loads everywhere.
//
// Experts are laid out as Megatron-core does: EP rank r of a group holds
// experts [r E / ep, (r + 1) E / ep). The load factor of EP rank r in a
// layer, f_r = ep x (the share of the layer's copies its experts receive),
// is 1 under balanced routing; dropless MoE (no capacity factor) makes the
// rank's expert GEMMs f_r times the balanced ones, and the rank with the
// largest f_r sets the pace of the layer. A capacity factor c pads or cuts
// every expert to c x the balanced load: equal work everywhere, and the
// copies above capacity dropped.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::workloads {

struct ModelSpec;

enum class RoutingKind { balanced, zipf, dirichlet, measured };

// One layer's row of a measured table: the tokens (or any non-negative
// weights) each expert received.
struct MeasuredLayerLoads {
  int layer = -1;  // model layer index; -1: every MoE layer not listed on its own
  std::vector<double> tokens;
};

struct RoutingSpec {
  RoutingKind kind = RoutingKind::balanced;
  double skew = 0;         // zipf: the exponent s; dirichlet: the concentration alpha
  std::uint64_t seed = 0;  // zipf and dirichlet (default: the scenario's seed)
  // The seed is the scenario's (no routing_seed): `run --seeds K` draws
  // other loads with each seed.
  bool seed_from_scenario = true;
  bool drawn() const { return kind == RoutingKind::zipf || kind == RoutingKind::dirichlet; }
  std::string file;  // measured: where the table came from (reports)
  std::vector<MeasuredLayerLoads> measured;
  bool balanced() const { return kind == RoutingKind::balanced; }
};

std::string_view to_string(RoutingKind kind);

// The share of a MoE layer's token copies each expert receives, per layer
// of the model and per MTP module (index layers + k): experts entries
// adding up to 1, empty for dense layers.
struct ExpertLoads {
  std::vector<std::vector<double>> share;
  const std::vector<double>& of_layer(int layer) const { return share[static_cast<std::size_t>(layer)]; }
};
ExpertLoads expert_loads(const ModelSpec& model);

// EP rank r's load factor in one layer: ep x the share of its experts.
std::vector<double> rank_load_factors(const std::vector<double>& share, int ep);

// The figures a run reports about its routing (summary.json's moe.routing).
struct RoutingFigures {
  // Over the MoE layers: the largest expert share x experts (1 balanced),
  // the busiest EP rank's load factor (largest, and its mean over layers),
  // and the fraction of token copies above capacity (0 when dropless).
  double busiest_expert_factor = 1;
  double busiest_rank_factor = 1;
  double mean_busiest_rank_factor = 1;
  double dropped_fraction = 0;
};
RoutingFigures routing_figures(const ModelSpec& model, int ep);

// The zipf shares before the permutation, rank 1 first: r^-s / H(E, s).
std::vector<double> zipf_shares(int experts, double s);

}  // namespace trainsim::workloads
