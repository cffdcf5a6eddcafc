#pragma once
// How the cluster's communication library (NCCL, RCCL) runs collectives: the
// algorithm choice, the fidelity of the flow model and the software latency
// NCCL adds to every collective. Plain data: sim/ builds the flows.
#include <optional>
#include <string_view>
#include <vector>

namespace trainsim::platforms {

// NCCL's algorithm names, plus `hierarchical` (intra-node reduce-scatter,
// inter-node all-reduce per rail, intra-node all-gather, as Horovod and
// torch's hierarchical all-reduce run it). `automatic` is NCCL's tuner: the
// algorithm with the least estimated time for this size and group shape.
// `direct` is what all-to-all and send_recv use (point-to-point transfers,
// no choice); it is reported, never asked for.
// direct (all-to-all, send/recv) and p2p_ring are not for users to ask for:
// p2p_ring is what a workload asks for when its ranks pass blocks to their
// neighbour in group order with plain send/recv (ring attention), one flow
// per rank and no NCCL channels over other NICs.
enum class CollectiveAlgorithm : unsigned char {
  automatic,
  ring,
  tree,
  hierarchical,
  nvls,
  direct,
  p2p_ring
};
std::string_view to_string(CollectiveAlgorithm algorithm);
// Parses what a user may ask for: auto, ring, tree, hierarchical, nvls.
std::optional<CollectiveAlgorithm> collective_algorithm_from_string(std::string_view text);
// "auto, ring, tree, hierarchical, nvls", for messages.
std::string_view collective_algorithm_names();

// detailed: every step of the algorithm is a set of flows (a ring all-reduce
// over n ranks is 2(n-1) steps of n flows), so contention is seen step by
// step. fast: one flow per edge of the algorithm carrying the whole volume,
// plus the latency terms of the steps it stands for. automatic ("auto"): the
// detailed steps, computed without SimGrid flows while nothing else needs the
// collective's links (each step then takes exactly its latency plus its bytes
// at the route's narrowest link), replayed as detailed flows while something
// does (docs/collectives.md, "Fidelity").
enum class Fidelity : unsigned char { detailed, fast, automatic };
std::string_view to_string(Fidelity fidelity);

struct CollectiveConfig {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;
  Fidelity fidelity = Fidelity::detailed;
  // NCCL's fixed cost of one collective (kernel launch, proxy handshake),
  // charged once per collective on top of the per-step link latencies.
  double launch_latency_s = 0;
  // Pipelined algorithms (tree, broadcast, NVLS) cut the message into the
  // number of chunks that minimises the pipeline's time, at most this many.
  int max_pipeline_chunks = 64;
};

}  // namespace trainsim::platforms
