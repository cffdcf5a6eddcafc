#pragma once
// How a collective algorithm is laid out (internal to sim/collectives): each
// algorithm, in its own file of sim/collectives/algorithms/, turns (op,
// group, size) into an Expansion: its phases, each with the edges it loads
// (whole-pass volumes: the flows of the fast fidelity and the basis of the
// tuner's estimates) and its latency terms (the closed form's), plus a
// factory for the detailed step-by-step state machine. algorithm_table()
// lists the algorithms with their traits; factory.cpp picks one and turns
// its expansion into flows.
//
// Adding an algorithm: its CollectiveAlgorithm (platforms/collective_config),
// its file in sim/collectives/algorithms/ (an expansion and its traits), and
// one line in algorithm_table() (factory.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {

struct Phase {
  std::vector<FlowRequest> edges;  // src, dst and the bytes the edge carries over the phase
  double latency_s = 0;            // latency terms of the phase's closed form
  double fill_fraction = 0;        // pipelines: fill and drain, as a fraction of the bandwidth term
  // Latency that no flow carries in either fidelity (NVLS's fixed cost).
  double fixed_latency_s = 0;
  // Flows of the phase's step-by-step form (ring phases: steps x ring
  // edges); 0 where not counted (the limit on them never applies).
  std::int64_t detailed_flows = 0;
};

struct Expansion {
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::ring;
  int channels = 1;
  // What a ring across nodes pays per step (collectives.protocol): the
  // protocol NCCL's tuner picked under `auto`; wire for every other expansion.
  platforms::RingProtocol protocol = platforms::RingProtocol::wire;
  std::vector<Phase> phases;
  // The step-by-step form; none when the algorithm has only its aggregated
  // form (NVLSTree: the detailed fidelity runs the fast flows).
  std::function<std::unique_ptr<Collective>()> detailed;
  // All-to-all has no aggregated form: the fast fidelity runs it step by step.
  bool fast_is_detailed = false;
};

// One algorithm: the ops it runs, when the group allows it, whether NCCL's
// tuner weighs it under `auto`, and its expansion.
struct AlgorithmTraits {
  platforms::CollectiveAlgorithm algorithm;
  std::vector<workloads::CollectiveOp> ops;
  // Never a candidate of `auto`: runs only when a request asks for it
  // (p2p_ring, a workload's plain send/recv ring).
  bool only_when_asked;
  // Why the group's shape rules it out for `op` (one of `ops`), in the
  // user's terms; "" when it can run.
  std::string (*unavailable)(workloads::CollectiveOp op, const GroupLayout& layout, const ClusterZone& zone);
  // NCCL's tuner does not weigh what NCCL does not run: hierarchical, and
  // NVLS across nodes (it needs IB SHARP, which no fabric here offers).
  bool (*tuner_considers)(const GroupLayout& layout);
  Expansion (*expand)(workloads::CollectiveOp op, const GroupLayout& layout, double bytes,
                      const ClusterZone& zone);
  // An uneven all-to-all: the bytes each member sends each member
  // (CollectiveRequest::exchange, all passes together); null when the
  // algorithm cannot run one.
  Expansion (*expand_uneven)(const GroupLayout& layout, const workloads::Exchange& exchange,
                             const ClusterZone& zone) = nullptr;
};
// For algorithms that run on any group and that the tuner always weighs.
std::string available_on_any_group(workloads::CollectiveOp op, const GroupLayout& layout,
                                   const ClusterZone& zone);
bool always_weighed(const GroupLayout& layout);
// Every algorithm a request may resolve to, NCCL's first (ring, tree,
// NVLSTree, NVLS, then hierarchical and direct): `auto` takes the first of
// the fastest, and estimates are listed in this order.
const std::vector<AlgorithmTraits>& algorithm_table();
const AlgorithmTraits& traits_of(platforms::CollectiveAlgorithm algorithm);

// The algorithms (sim/collectives/algorithms/*.cpp).
AlgorithmTraits ring_traits();
AlgorithmTraits p2p_ring_traits();
AlgorithmTraits tree_traits();
AlgorithmTraits nvls_tree_traits();
AlgorithmTraits nvls_traits();
AlgorithmTraits hierarchical_traits();
AlgorithmTraits direct_traits();
AlgorithmTraits deepep_traits();

// ---- Costing an expansion (expansion.cpp) ----

// The largest route latency among the edges.
double max_latency(const std::vector<FlowRequest>& edges, const ClusterZone& zone);
// The busiest link direction's load over its bandwidth: how long the phase
// takes at least when its edges move their bytes at the same time.
double bandwidth_term_s(const std::vector<FlowRequest>& edges, const ClusterZone& zone);
// Chunks of a pipeline `depth` hops deep whose edges are these.
int pipeline_chunks(const std::vector<FlowRequest>& edges, int depth, double latency_s,
                    const ClusterZone& zone);
// Latency terms and fill of a pipeline phase whose edges are set.
void set_pipeline(Phase& phase, int depth, int chunks, double latency_s);
// Uncontended time of the expansion's flows plus its latency terms.
double estimate(const Expansion& x, const ClusterZone& zone);

// ---- Pieces the algorithms share ----

// Ring phases (algorithms/ring.cpp): steps of an op over n ranks (all-reduce
// 2(n-1), the others n-1), the route latency of each rank's hop, and a ring
// phase of `steps` steps of chunk[c] bytes on ring c with `window` steps in
// flight per rank.
int ring_steps(workloads::CollectiveOp op, int n);
std::vector<std::vector<double>> wire_hops(const std::vector<std::vector<int>>& rings,
                                           const ClusterZone& zone);
Phase ring_phase(const std::vector<std::vector<int>>& rings, int steps, const std::vector<double>& chunk,
                 const std::vector<std::vector<double>>& hops, int window, const ClusterZone& zone);
// Ring steps a rank may have on their way (collectives.steps_in_flight).
int in_flight(const ClusterZone& zone);

// Trees (algorithms/tree.cpp): both directions of every parent-child link,
// `per_tree` bytes each; returns the trees' greatest height.
int add_tree_edges(const std::vector<Tree>& trees, double per_tree, std::vector<FlowRequest>& edges);

// In-switch reduction (algorithms/nvls.cpp): the NVLS phase of `op` on every
// node of the layout (`bytes` per GPU buffer), with its switch groups and
// chunking for the detailed form.
Phase switch_phase(workloads::CollectiveOp op, const GroupLayout& layout, double bytes,
                   const ClusterZone& zone, std::vector<SwitchGroup>& groups, int& chunks, double& up_chunk,
                   double& down_chunk);

// Whether every domain of the layout has an NVLS switch, and the share of
// the ports' effective rate its multimem transfers reach (cluster
// nvls_efficiency; the lowest of the layout's domains).
bool every_domain_has_nvls(const GroupLayout& layout, const ClusterZone& zone);
double nvls_efficiency(const GroupLayout& layout, const ClusterZone& zone);

// Hierarchical phases (algorithms/hierarchical.cpp): a per-node phase, a
// ring across nodes per rail on S/m, a per-node phase again. `intra` appends
// one per-node phase of the op it is given to the expansion, and its
// detailed form to `detailed`.
using DetailedPhases = std::vector<std::function<std::unique_ptr<Collective>()>>;
using IntraNodePhase =
    std::function<void(workloads::CollectiveOp op, Expansion& x, DetailedPhases& detailed)>;
Expansion hierarchical_phases(workloads::CollectiveOp op, const GroupLayout& layout, double bytes,
                              const ClusterZone& zone, platforms::CollectiveAlgorithm algorithm,
                              const IntraNodePhase& intra);

}  // namespace trainsim::sim
