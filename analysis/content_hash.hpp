#pragma once
// A 64-bit hash of a sequence of numbers, bit for bit (-0.0 and 0.0 differ,
// as do NaNs of other payloads), for analyses that compute a figure once per
// distinct input: GPUs or links whose inputs are equal give equal figures,
// and on a large run most of them are equal (every data-parallel replica's
// GPU at one pipeline and tensor-parallel place runs the same timeline).
// A hash only finds the candidate: the caller compares the inputs themselves
// before reusing a figure, so a collision costs a comparison, never a wrong
// figure.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace trainsim::analysis {

class ContentHash {
 public:
  void add(std::uint64_t x) { h_ = mix(h_, x); }
  void add(double x) { add(std::bit_cast<std::uint64_t>(x)); }
  // A list's length, then its intervals' ends: the starts and the ends in
  // two chains of their own, joined at the end (one chain waits on each
  // multiply in turn; two run side by side, and utilisation hashes every
  // link orbit's flow times).
  void add(const std::vector<std::pair<double, double>>& intervals) {
    add(static_cast<std::uint64_t>(intervals.size()));
    std::uint64_t starts = h_, ends = h_ ^ 0x9e3779b97f4a7c15ULL;
    for (const auto& [a, b] : intervals) {
      starts = mix(starts, std::bit_cast<std::uint64_t>(a));
      ends = mix(ends, std::bit_cast<std::uint64_t>(b));
    }
    h_ = mix(starts, ends);
  }
  std::uint64_t value() const { return h_; }

 private:
  static std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
    h = (h ^ x) * 0x100000001b3ULL;
    return h ^ (h >> 29);
  }

  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// Whether two numbers have the same bits (what a figure computed from them
// depends on; == would take -0.0 for 0.0).
inline bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}
inline bool same_bits(const std::vector<std::pair<double, double>>& a,
                      const std::vector<std::pair<double, double>>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i].first, b[i].first) || !same_bits(a[i].second, b[i].second))
      return false;
  return true;
}

}  // namespace trainsim::analysis
