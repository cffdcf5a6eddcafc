#pragma once
// How the cluster's communication library (NCCL, RCCL) runs collectives: the
// algorithm choice, the fidelity of the flow model and the software latency
// NCCL adds to every collective. Plain data: sim/ builds the flows.
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
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
// nvls_tree is NCCL's NVLSTree all-reduce across nodes of NVLS switches: the
// node's GPUs reduce into the NVSwitch, one head per NIC runs a double binary
// tree over the nodes, the result is multicast back through the switch.
// deepep is DeepEP's MoE dispatch / combine (an all-to-all asked for by
// plan.moe_dispatcher: RDMA to the same-index GPU of each destination node,
// then NVLink forwarding; sim/collectives/algorithms/deepep.cpp): reported,
// never asked for through collectives.algorithm.
// (Values are saved in run archives: new ones go at the end.)
enum class CollectiveAlgorithm : unsigned char {
  automatic,
  ring,
  tree,
  hierarchical,
  nvls,
  direct,
  p2p_ring,
  nvls_tree,
  deepep
};
inline constexpr CollectiveAlgorithm kLastCollectiveAlgorithm = CollectiveAlgorithm::deepep;
std::string_view to_string(CollectiveAlgorithm algorithm);
// What a user may ask for, word and value, in the order docs and messages
// list them: auto, ring, tree, hierarchical, nvls, nvls_tree. One table for
// the scenario reader, the key table (schema) and to_string; the same for
// the other enums of this file below.
template <class E>
using ChoiceWords = std::vector<std::pair<std::string_view, E>>;
const ChoiceWords<CollectiveAlgorithm>& collective_algorithm_words();
std::optional<CollectiveAlgorithm> collective_algorithm_from_string(std::string_view text);
// The words of a table alone, for a key table's choice.
template <class E>
std::vector<std::string_view> words_of(const ChoiceWords<E>& table) {
  std::vector<std::string_view> words;
  for (const auto& [word, value] : table)
    words.push_back(word);
  return words;
}

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
// auto, detailed, fast.
const ChoiceWords<Fidelity>& fidelity_words();

// What a ring step across nodes costs beyond its bytes. wire (the default):
// each hop its route's latency, from the platform (NVLink, NIC, switches).
// The others charge NCCL's own per-step costs of a protocol (its tuner's
// constants, src/graph/tuning.cc): simple, ll128 and ll as NCCL_PROTO forces
// them, automatic ("auto") the one NCCL's tuner would pick for the size.
// They apply to rings whose group spans nodes; docs/collectives.md,
// "Protocols".
enum class RingProtocol : unsigned char { wire, automatic, simple, ll128, ll };
std::string_view to_string(RingProtocol protocol);
// wire, auto, simple, ll128, ll.
const ChoiceWords<RingProtocol>& ring_protocol_words();

struct CollectiveConfig {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;
  // automatic by default: the detailed answer (the same task times and link
  // statistics, tests/scenario/automatic_fidelity_test.cpp) at a fraction of
  // the flows; detailed and fast stay explicit choices.
  Fidelity fidelity = Fidelity::automatic;
  // NCCL's fixed cost of one collective (kernel launch, proxy handshake),
  // charged once per collective on top of the per-step link latencies.
  double launch_latency_s = 0;
  // Pipelined algorithms (tree, broadcast, NVLS) cut the message into the
  // number of chunks that minimises the pipeline's time, at most this many.
  int max_pipeline_chunks = 64;
  // Ring steps a rank may have in flight to the next rank. 1 (the default):
  // a rank sends step k once its step k - 1 has arrived, so a slow hop (a
  // NIC) pays its latency at every step and a ring across nodes pays
  // steps x the slowest hop's latency. More: the rank forwards each chunk as
  // soon as it has it, up to this many unacknowledged, as NCCL's connection
  // FIFO of NCCL_STEPS = 8 slots allows (2 ring steps with the Simple
  // protocol, whose chunks take NCCL_STEPS / 2 slots; 8 with LL and LL128);
  // with enough of them the ring pays the sum of its hops' latencies over its
  // steps, as NCCL's own latency model (src/graph/tuning.cc) counts it
  // (docs/collectives.md, "Ring steps in flight").
  int ring_steps_in_flight = 1;
  // Step costs of rings across nodes (RingProtocol). With a protocol, a
  // rank has NCCL_STEPS = 8 steps in flight and steps_in_flight is not used.
  RingProtocol ring_protocol = RingProtocol::wire;
  // Compute/communication interference (opt-in; 0 = off): the share of a
  // GPU's compute speed that NCCL's kernels take while the GPU takes part in
  // a collective or a send / receive. NCCL runs one thread block per channel
  // on an SM of its own, so a GEMM overlapped with it has fewer SMs (an
  // all-gather of 24 channels holds 24 of an H100's 132 SMs, 18%); the
  // replay runs compute at (1 - share) of its speed during those spans
  // (sim/replay/replay.cpp; docs/collectives.md, "Interference").
  double compute_interference = 0;
  // Under `auto`, a collective that cannot be computed alone (its links are
  // shared, or its own flows oversubscribe one) and whose step-by-step form
  // has more than this many flows runs its fast form (one flow per edge)
  // instead; 0 (the default): no limit, every such collective runs step by
  // step. SimGrid re-solves the sharing of every flow that shares a link
  // with a finished one, so a ring whose channels share each GPU's port (16
  // rings of 144 ranks across GB200 NVL72 racks: 329k flows, 2,304 in one
  // sharing component) costs flows x component; its fast form costs n x C
  // flows (docs/collectives.md, "A limit on detailed flows").
  std::int64_t detailed_flow_limit = 0;
};
// At most half: SimGrid shares a host's speed max-min fairly between the
// compute task and NCCL's bounded share, so a larger bound would still leave
// compute half.
inline constexpr double kMaxComputeInterference = 0.5;
// The largest detailed_flow_limit the reader takes (2^40 flows: more than
// any collective can have).
inline constexpr std::int64_t kMaxDetailedFlowLimit = std::int64_t{1} << 40;
// NCCL's FIFO holds NCCL_STEPS = 8 slots per connection; more than a few
// times that changes nothing a ring can show.
inline constexpr int kMaxRingStepsInFlight = 64;

}  // namespace trainsim::platforms
