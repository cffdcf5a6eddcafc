#pragma once
// One uniform draw for every seeded model (perturbations, expert routing,
// DeepEP touch probabilities): the top 53 bits of std::mt19937_64 (bit-exact
// by the standard) as a double in [0, 1), the same on every platform, where
// std::uniform_real_distribution is implementation-defined.
#include <cstdint>
#include <random>

namespace trainsim::platforms {

inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace trainsim::platforms
