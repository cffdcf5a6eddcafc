#include "workloads/task_graph_fingerprint.hpp"

#include <array>
#include <bit>
#include <type_traits>

namespace trainsim::workloads {

namespace {

constexpr std::uint64_t kPrime = 0x100000001b3ull;

// kPrimePowers[k]: the prime to the k-th power, mod 2^64.
constexpr std::array<std::uint64_t, 9> kPrimePowers = [] {
  std::array<std::uint64_t, 9> powers{};
  powers[0] = 1;
  for (std::size_t k = 1; k < powers.size(); ++k)
    powers[k] = powers[k - 1] * kPrime;
  return powers;
}();

// FNV-1a over 8 bytes, byte by byte: what fnv1a_add() must give.
constexpr std::uint64_t byte_loop(std::uint64_t hash, std::uint64_t bits) {
  for (int i = 0; i < 8; ++i)
    hash = (hash ^ ((bits >> (8 * i)) & 0xff)) * kPrime;
  return hash;
}

// FNV-1a over the 8 bytes of -1 (every int field a task leaves unset):
// xoring a byte into the hash changes its lowest byte only, and the lowest
// byte of a product depends only on the factors' lowest bytes, so over a
// fixed value the hash becomes hash * prime^8 plus a term that depends
// only on its lowest byte: kAllOnes[hash & 0xff].
constexpr std::array<std::uint64_t, 256> kAllOnes = [] {
  std::array<std::uint64_t, 256> terms{};
  for (std::uint64_t low = 0; low < terms.size(); ++low)
    terms[low] = byte_loop(low, ~std::uint64_t{0}) - low * kPrimePowers[8];
  return terms;
}();

// fnv1a_add's body, inlined into the fingerprint's loop: as a call per
// value, the three-byte case below cost as much as it saved.
[[gnu::always_inline]] inline std::uint64_t add_bits(std::uint64_t hash, std::uint64_t bits) {
  if (bits <= 0xff)  // a small integer, or 0: one byte then seven zero bytes
    return (hash ^ bits) * kPrimePowers[8];
  if (bits == ~std::uint64_t{0})
    return hash * kPrimePowers[8] + kAllOnes[hash & 0xff];
  // Up to three bytes (GPU ranks, task ids and event positions below 2^24:
  // most of the wide integers a graph holds), then five zero bytes: three
  // steps and one multiplication instead of eight steps.
  if (bits <= 0xffffff) {
    hash = (hash ^ (bits & 0xff)) * kPrime;
    hash = (hash ^ ((bits >> 8) & 0xff)) * kPrime;
    return ((hash ^ (bits >> 16)) * kPrime) * kPrimePowers[5];
  }
  // Four zero bytes first (a double of few significant bits: most byte
  // counts, 2^28 activations and the like): one multiplication, then the
  // four high bytes.
  if ((bits & 0xffffffff) == 0) {
    hash *= kPrimePowers[4];
    for (int i = 4; i < 8; ++i)
      hash = (hash ^ ((bits >> (8 * i)) & 0xff)) * kPrime;
    return hash;
  }
  // Eight steps without a branch: a branch per byte to skip zero ones cost
  // more than the multiplications it saved.
  return byte_loop(hash, bits);
}

}  // namespace

std::uint64_t fnv1a_add(std::uint64_t hash, std::uint64_t bits) {
  return add_bits(hash, bits);
}

namespace {

template <typename T>
constexpr bool one_unsigned_byte() {
  if constexpr (std::is_enum_v<T>)
    return sizeof(T) == 1 && std::is_unsigned_v<std::underlying_type_t<T>>;
  else
    return sizeof(T) == 1 && std::is_unsigned_v<T>;
}

// A value as the fingerprints read it: an integer or enum sign-extended to
// 64 bits, a float as its double's bit pattern.
template <typename T>
std::uint64_t bits_of(T value) {
  static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>);
  if constexpr (std::is_floating_point_v<T>)
    return std::bit_cast<std::uint64_t>(static_cast<double>(value));
  else
    return static_cast<std::uint64_t>(value);
}

class Fnv1a {
 public:
  template <typename T>
  void add(T value) {
    const std::uint64_t bits = bits_of(value);
    if constexpr (one_unsigned_byte<T>())  // an enum or bool: below 0x100 whatever its value
      hash_ = (hash_ ^ bits) * kPrimePowers[8];
    else
      hash_ = add_bits(hash_, bits);
  }
  // Version 6-9 archives' walk of a task: its fields one by one, each int
  // as an int; copy_engine and memory_bound_fraction not read.
  void add_task(const Task& t) {
    add(t.kind);
    add(t.comm);
    add(t.op);
    add(t.algorithm);
    add(t.transfer);
    // Each as an int, whatever its width in Task (the fingerprints stay).
    for (int x : {t.gpu, t.peer, t.group, t.stage, int{t.chunk}, t.micro_batch, t.fold, int{t.layer}})
      add(x);
    for (double x : {t.duration_s, t.model_flops, t.hardware_flops, t.bytes})
      add(x);
    add(t.attention);
    add(t.memory_begin);
    add(t.memory_end);
    // Only in graphs with imbalanced expert routing (others keep their
    // fingerprints).
    if (t.exchange >= 0 || t.imbalance_s != 0) {
      add(t.exchange);
      add(t.imbalance_s);
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

// The walk both fingerprints take: every task as its hash's add_task reads
// it, then every group, exchange, dependency and memory event, in one order.
template <typename Hash>
std::uint64_t fingerprint_walk(const TaskGraph& graph) {
  Hash h;
  h.add(graph.gpu_count);
  h.add(graph.groups.size());
  for (const auto& group : graph.groups) {
    h.add(group.size());
    for (int gpu : group)
      h.add(gpu);
  }
  h.add(graph.size());
  for (TaskId v = 0; v < graph.size(); ++v)
    h.add_task(graph[v]);
  if (!graph.exchanges.empty()) {
    h.add(graph.exchanges.size());
    for (const auto& m : graph.exchanges) {
      h.add(m.send_bytes.size());
      for (double bytes : m.send_bytes)
        h.add(bytes);
      // Only for hierarchical exchanges (the others keep their fingerprints).
      if (!m.dispatch_bytes.empty()) {
        for (double bytes : m.dispatch_bytes)
          h.add(bytes);
        for (double bytes : m.combine_bytes)
          h.add(bytes);
        h.add(m.node_share);
        // Only under skewed routing (balanced exchanges keep their fingerprints).
        for (double share : m.node_shares)
          h.add(share);
      }
    }
  }
  h.add(boost::num_edges(graph.dependencies()));
  graph.for_each_dependency_in_order([&](TaskId before, TaskId after) {
    h.add(before);
    h.add(after);
  });
  h.add(graph.resident_memory.size());
  for (const auto& m : graph.resident_memory)
    for (double bytes : m.bytes)
      h.add(bytes);
  h.add(graph.memory.size());
  for (const auto& m : graph.memory) {
    h.add(m.task);
    h.add(m.gpu);
    h.add(m.at);
    h.add(m.kind);
    h.add(m.bytes);
  }
  return h.value();
}

// The multiplier: an odd constant (2^64 / the golden ratio, rounded to
// odd); the rotation brings the product's mixed high bits down to where
// the next value's low bits are xored in.
[[gnu::always_inline]] inline std::uint64_t rotate_step(std::uint64_t hash, std::uint64_t bits) {
  return std::rotl((hash ^ bits) * 0x9e3779b97f4a7c15ull, 29);
}

// One multiplication and one rotation per value, each a bijection of the
// hash: a value that differs changes the hash after it, and every later
// step keeps it different, so a graph differing from another in one field
// of one task (the walk's values otherwise the same) always fingerprints
// differently. FNV-1a's eight steps per value (three or four for most,
// above) cost ~0.5e9 instructions on scale-16k's 1.15M tasks.
class MultiplyRotate {
 public:
  template <typename T>
  void add(T value) {
    const std::uint64_t bits = bits_of(value);
    hash_ = rotate_step(hash_, bits);
  }
  // Every field of the task, packed into 12 words without overlap (each
  // field its own bits of one word), so a change to any field changes a
  // word: the byte-sized ones in one, two 32-bit ones in each other.
  void add_task(const Task& t) {
    const auto byte = [](auto field) {
      static_assert(sizeof(field) == 1);
      return std::uint64_t{static_cast<std::uint8_t>(field)};
    };
    const auto pair = [](auto low, auto high) {
      static_assert(sizeof(low) <= 4 && sizeof(high) <= 4);
      return std::uint64_t{static_cast<std::uint32_t>(low)} | std::uint64_t{static_cast<std::uint32_t>(high)}
                                                                  << 32;
    };
    add(byte(t.kind) | byte(t.comm) << 8 | byte(t.op) << 16 | byte(t.transfer) << 24 |
        byte(t.algorithm) << 32 | byte(t.attention) << 40 | byte(t.copy_engine) << 48);
    add(pair(static_cast<std::uint16_t>(t.chunk) | std::uint32_t{static_cast<std::uint16_t>(t.layer)} << 16,
             t.gpu));
    add(pair(t.peer, t.group));
    add(pair(t.stage, t.micro_batch));
    add(pair(t.exchange, t.fold));
    for (double x :
         {t.duration_s, t.memory_bound_fraction, t.model_flops, t.hardware_flops, t.bytes, t.imbalance_s})
      add(x);
    add(pair(t.memory_begin, t.memory_end));
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace

std::uint64_t multiply_rotate(std::uint64_t hash, std::uint64_t bits) {
  return rotate_step(hash, bits);
}

std::uint64_t graph_fingerprint(const TaskGraph& graph, FingerprintHash hash) {
  return hash == FingerprintHash::fnv1a ? fingerprint_walk<Fnv1a>(graph)
                                        : fingerprint_walk<MultiplyRotate>(graph);
}

}  // namespace trainsim::workloads
