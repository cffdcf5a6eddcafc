// The graph fingerprint's FNV-1a step (fnv1a_add) multiplies a run of zero
// bytes by the prime's power at once: it must give what the byte loop gives
// for every kind of value the fingerprint reads (small and large integers,
// ids of up to three bytes and the first of four, negative ones
// sign-extended, doubles whose low bytes are zero, zero bytes between
// others, -1 whatever the hash's lowest byte), or every archive's stored
// fingerprint would change.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::workloads {
namespace {

std::uint64_t byte_loop(std::uint64_t hash, std::uint64_t bits) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (bits >> (8 * i)) & 0xff;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

TEST(GraphFingerprint, ZeroByteRunsHashAsTheByteLoopDoes) {
  std::vector<std::uint64_t> values = {0,
                                       1,
                                       255,
                                       256,
                                       0x100,
                                       0xff00,
                                       0x10000,
                                       0xff00ff,  // three bytes, the middle one zero
                                       0xfffffe,
                                       0xffffff,   // the widest three-byte value
                                       0x1000000,  // the narrowest four-byte one
                                       static_cast<std::uint64_t>(-1),
                                       static_cast<std::uint64_t>(static_cast<std::int64_t>(-1)),
                                       static_cast<std::uint64_t>(static_cast<std::int64_t>(-3)),
                                       0x0100000000000001ull,
                                       0x8000000000000000ull,
                                       0x00ff00ff00ff00ffull,
                                       std::bit_cast<std::uint64_t>(1.0),
                                       std::bit_cast<std::uint64_t>(0.5),
                                       std::bit_cast<std::uint64_t>(-2.0),
                                       std::bit_cast<std::uint64_t>(1e-6),
                                       std::bit_cast<std::uint64_t>(453024768.0),
                                       std::bit_cast<std::uint64_t>(268435456.0),  // low four bytes zero
                                       0x0000000100000000ull,
                                       0xff00000000000000ull,
                                       0x0000000080000000ull};  // the fourth byte alone
  std::mt19937_64 draw(7);
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t v = draw();
    v &= draw() | draw();  // zero bytes, often in runs
    values.push_back(v);
    values.push_back(v >> (8 * (i % 8)));
  }
  std::uint64_t a = 0xcbf29ce484222325ull, b = a;
  for (const std::uint64_t v : values) {
    a = fnv1a_add(a, v);
    b = byte_loop(b, v);
    ASSERT_EQ(a, b) << "value " << v;
  }
}

// -1 is hashed from a table indexed by the hash's lowest byte: every one.
TEST(GraphFingerprint, MinusOneHashesAsTheByteLoopDoesFromEveryLowestByte) {
  std::mt19937_64 draw(11);
  for (std::uint64_t low = 0; low < 256; ++low) {
    const std::uint64_t hash = (draw() & ~std::uint64_t{0xff}) | low;
    ASSERT_EQ(fnv1a_add(hash, ~std::uint64_t{0}), byte_loop(hash, ~std::uint64_t{0}))
        << "lowest byte " << low;
  }
}

}  // namespace
}  // namespace trainsim::workloads
