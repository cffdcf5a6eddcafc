// NCCL's ring protocols as its tuner charges them (src/graph/tuning.cc,
// ncclTunerConstantsDefaults of NCCL 2.2x: baseLatencies and hwLatencies of
// the Ring rows, in microseconds; the bandwidth factors of
// ncclTopoTuneModel). These are the constants NCCL picks its protocol by;
// docs/collectives.md, "Protocols", says how the flow model charges them.
#include <array>
#include <cmath>
#include <stdexcept>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {
namespace {

using platforms::RingProtocol;

// NCCL_STEPS: slots per connection. LL and LL128 move one slot per ring
// step; Simple's chunks take NCCL_STEPS / 2 slots, but it moves them in
// slices of 2 slots, forwarded as they arrive, so its chunks pipeline too.
constexpr int kNcclSteps = 8;

// Simple: base 8.4 us, 3.4 us per NVLink step, 14 us per network step, the
// links' whole bandwidth. LL128: 14, 1.9, 4.0 us; 120 of every 128 bytes are
// data (NCCL: busBw x 0.92). LL: 6.6, 0.6 us (x 1.8 across nodes, as the
// tuner charges LL inside a node when the ring spans nodes), 2.7 us; 4 of
// every 8 bytes are flags and NCCL counts a quarter of the bandwidth across
// nodes (busBw / 4).
const ProtocolCosts kSimple{RingProtocol::simple, 8.4e-6, 3.4e-6, 14.0e-6, 1.0, kNcclSteps};
const ProtocolCosts kLl128{RingProtocol::ll128, 14.0e-6, 1.9e-6, 4.0e-6, 0.92, kNcclSteps};
const ProtocolCosts kLl{RingProtocol::ll, 6.6e-6, 0.6e-6 * 1.8, 2.7e-6, 0.25, kNcclSteps};

// treeCorrectionFactor's Simple row (src/graph/tuning.cc, NCCL 2.2x, the
// same row in 2.18 to 2.27), indexed by floor(log2(bytes / 64)): "trees are
// not perfectly sticking to the model for medium sizes", a correction NCCL's
// developers measured and its tuner applies to the tree's bandwidth.
constexpr std::array<double, 23> kTreeCorrectionSimple{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                                       .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};

}  // namespace

double tree_correction_factor(double bytes) {
  // log2i(nBytes >> 6): sizes under 64 B and from 512 MiB on are not corrected.
  const double blocks = std::floor(bytes / 64.0);
  if (blocks < 1)
    return 1.0;
  const auto index = static_cast<std::size_t>(std::floor(std::log2(blocks)));
  return index < kTreeCorrectionSimple.size() ? kTreeCorrectionSimple[index] : 1.0;
}

const ProtocolCosts& protocol_costs(RingProtocol protocol) {
  switch (protocol) {
    case RingProtocol::simple:
      return kSimple;
    case RingProtocol::ll128:
      return kLl128;
    case RingProtocol::ll:
      return kLl;
    case RingProtocol::wire:
    case RingProtocol::automatic:
      break;
  }
  throw std::logic_error("protocol_costs: no costs for wire or auto");
}

std::vector<const ProtocolCosts*> candidate_protocols(RingProtocol asked) {
  if (asked == RingProtocol::automatic)
    return {&kSimple, &kLl128, &kLl};
  return {&protocol_costs(asked)};
}

}  // namespace trainsim::sim
