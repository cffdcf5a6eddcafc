#pragma once
// The building blocks of collectives (internal to sim/): how a group lies on
// the topology (nodes, rails, rings, trees) and the detailed state machines
// that emit one flow per algorithm step. The algorithms
// (sim/collectives/algorithms/, expansion.hpp) compose them.
#include <memory>
#include <vector>

#include "sim/collectives/collectives.hpp"

namespace trainsim::sim {

// ---- Layout of a group on the cluster (layout.cpp) ----

// NCCL's unit is the NVLink domain: a node, or with cluster.nvlink_domain
// (MNNVL, GB200 NVL72) the nodes whose GPUs share one NVSwitch fabric, which
// NCCL treats as one node of its rings, trees and NVLS (its clique). Below,
// "node" in the algorithms' terms means such a domain.
struct GroupLayout {
  std::vector<int> gpus;                  // the group's order
  std::vector<int> domains;               // distinct NVLink domains, in order of first appearance
  std::vector<std::vector<int>> members;  // per domain: its group members, in group order
  bool single_domain() const { return domains.size() == 1; }
  // Members per domain when every domain has the same number, else 0.
  int uniform_members() const;
};
GroupLayout layout_of(const std::vector<int>& gpus, const ClusterZone& zone);

// NCCL-style rings (channels), each a permutation of the group. One domain:
// one ring on NVSwitch and PCIe; on a cube-mesh, every NVLink Hamiltonian
// cycle that fits the lanes, in both directions; on a full mesh (MI300X),
// m - 1 rings on disjoint link directions, as RCCL runs them (every
// directed Hamiltonian cycle for 4 GPUs, where no such set exists). Several domains: one ring
// per NIC the group can use in every domain (its rails; at most
// platforms::kMaxRingRails); ring c enters domain k through the GPU of rail
// (c + k) mod C and leaves through rail (c + k + 1) mod C, so each
// inter-domain hop stays on one rail and every NIC carries one ring in each
// direction. Full-mesh nodes whose members each have a NIC are crossed on
// Walecki's zigzag paths instead, so that the rings use every mesh link
// direction once (RCCL's rings over an 8-NIC MI300X node).
std::vector<std::vector<int>> ring_channels(const GroupLayout& layout, const ClusterZone& zone);

// NCCL's double binary tree over domains, with a chain through each domain's
// members below the GPU that holds the tree edges (one tree pair per rail).
// parent[i] is the index in `gpus` of i's parent, -1 for the root. Without
// `chain_members` a tree holds only each domain's GPU of its rail (gpus[k]
// in domain k): the inter-domain part of NCCL's NVLSTree, whose heads reduce
// and broadcast inside their domain through the NVSwitch instead.
struct Tree {
  std::vector<int> gpus;
  std::vector<int> parent;
  int height() const;  // edges on the longest root-to-leaf path
};
std::vector<Tree> double_binary_trees(const GroupLayout& layout, const ClusterZone& zone,
                                      bool chain_members = true);
// NCCL's binary tree on ranks 0..n-1 (root 0); parent of each rank.
std::vector<int> nccl_btree_parents(int n);

// ---- NCCL's protocols (protocols.cpp) ----

// What NCCL's tuner charges a ring of one protocol (src/graph/tuning.cc,
// NCCL 2.2x): a fixed cost per collective, a cost per step inside a node
// (NVLink) and per step between nodes, a bandwidth factor (LL128's flags
// take 8 of 128 bytes, LL's half of every 8 bytes plus its slower loads),
// and the steps a rank may have in flight (NCCL_STEPS slots per connection).
struct ProtocolCosts {
  platforms::RingProtocol protocol;
  double base_s;
  double nvlink_step_s;
  double network_step_s;
  double bandwidth_factor;
  int steps_in_flight;
};
const ProtocolCosts& protocol_costs(platforms::RingProtocol protocol);
// The protocols NCCL's tuner weighs for `asked` (automatic: all three).
std::vector<const ProtocolCosts*> candidate_protocols(platforms::RingProtocol asked);
// The share of its pipeline model's bandwidth an all-reduce tree of `bytes`
// reaches under NCCL's Simple protocol (NCCL's treeCorrectionFactor: trees
// fall short of the model at medium sizes, down to 0.5 around 256 KiB and
// 0.7 at 32 MiB; 1 from 512 MiB on).
double tree_correction_factor(double bytes);

// ---- Detailed state machines (ring.cpp, pipelines.cpp, exchange.cpp) ----

// Rings of equal step count: on ring c, rank i sends chunk_bytes[c] to rank
// i+1 at each of `steps` steps; step k of rank i waits for step k-1 of rank
// i-1 (the chunk it forwards) and for fewer than `in_flight` of its own sends
// to be on their way (1: its step k-1 has arrived). All-reduce: 2(n-1) steps
// of S/(nC); reduce-scatter and all-gather: n-1 steps.
// `delays`, when given, holds per ring and rank the delay_s of the rank's
// sends (protocol costs beyond the hop's latency).
std::unique_ptr<Collective> make_ring_steps(std::vector<std::vector<int>> rings, int steps,
                                            std::vector<double> chunk_bytes, int in_flight = 1,
                                            std::vector<std::vector<double>> delays = {});

// The same rings in the quotient by an endpoint symmetry (quotient_ring.cpp,
// Collective::quotient): one state per orbit of ring positions. `delay_s`
// holds one delay per position, ring after ring. Null when the symmetry does
// not map the rings' steps onto themselves (an edge without an image edge of
// equal bytes and delay, two positions on one edge, an orbit not of exactly
// `order` positions with one representative sender).
std::unique_ptr<Collective> make_quotient_ring_steps(const std::vector<std::vector<int>>& rings, int steps,
                                                     const std::vector<double>& chunk_bytes, int in_flight,
                                                     const std::vector<double>& delay_s,
                                                     const EndpointSymmetry& symmetry);

// Pipelined chains (broadcast): chain[0] holds the data; each edge forwards
// `chunks` chunks of chunk_bytes[c], one at a time, each once received.
std::unique_ptr<Collective> make_chain_pipeline(std::vector<std::vector<int>> chains, int chunks,
                                                std::vector<double> chunk_bytes);

// Pipelined trees (all-reduce): each chunk is reduced up to the root (a node
// sends it once all its children did), then broadcast down; one chunk in
// flight per edge and direction.
std::unique_ptr<Collective> make_tree_pipeline(std::vector<Tree> trees, int chunks,
                                               std::vector<double> chunk_bytes);

// In-switch reduction (NVLS) on each domain of `nodes`: per chunk, every member
// sends up_bytes to the switch endpoint; once all have, the switch sends
// down_bytes to every member. All-reduce: up = down = S/K; reduce-scatter:
// up S/K, down S/(mK); all-gather: up S/(mK), down S/K.
struct SwitchGroup {
  int switch_endpoint;
  std::vector<int> members;
};
std::unique_ptr<Collective> make_switch_pipeline(std::vector<SwitchGroup> nodes, int chunks, double up_bytes,
                                                 double down_bytes);

// Every flow at once, each finishing on its own (all-to-all, send_recv, fast
// expansions).
std::unique_ptr<Collective> make_flow_set(std::vector<FlowRequest> flows);
// Phases one after the other: phase p+1 starts when phase p has finished.
std::unique_ptr<Collective> make_sequence(std::vector<std::unique_ptr<Collective>> phases);

}  // namespace trainsim::sim
