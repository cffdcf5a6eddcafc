#pragma once
// Sorting (time, tag) pairs the way std::sort orders them, in fewer
// instructions: the link statistics sort every link's flows by start
// (analysis/utilization.cpp, the link-load index of critical_path.cpp), a
// few thousand to tens of thousands of flows per link, a sixth of the
// analyses' work on a folded ZeRO-3 run (docs/performance.md).
//
// A non-negative double's bits, read as an unsigned integer, order as the
// double does, so a stable radix sort on those bits (8 bits a pass, passes
// where every key has the same byte skipped) puts the pairs in order of
// time, ties in the order they came. That is std::sort's order of the pairs
// when, as both callers guarantee, the tags do not decrease along the input
// (a list position, or one constant); the result is then the same sequence
// of pairs. Any other input (a negative time, -0.0, NaN, a short list) goes
// to std::sort.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace trainsim::analysis {

// Sorts [first, last), pairs of (time in s, tag) whose tags do not decrease
// along the range, into std::sort's order. `scratch` is reused between calls.
template <std::contiguous_iterator Iterator,
          class Tag = typename std::iterator_traits<Iterator>::value_type::second_type>
void sort_by_time(Iterator first, Iterator last, std::vector<std::pair<double, Tag>>& scratch) {
  const auto n = static_cast<std::size_t>(last - first);
  constexpr std::size_t kSmall = 64;  // below this std::sort is as quick
  if (n < 2)
    return;
  std::array<std::array<std::uint32_t, 256>, 8> counts{};
  bool radix = n >= kSmall && n <= UINT32_MAX;
  for (Iterator it = first; radix && it != last; ++it) {
    const double t = it->first;
    // Non-negative, not -0.0, not NaN: the bits order as the values.
    if (!(t >= 0) || std::signbit(t)) {
      radix = false;
      break;
    }
    const auto bits = std::bit_cast<std::uint64_t>(t);
    for (std::size_t b = 0; b < 8; ++b)
      ++counts[b][(bits >> (8 * b)) & 0xff];
  }
  if (!radix) {
    std::sort(first, last);
    return;
  }
  scratch.resize(n);
  // The pairs move between the range and the scratch, one pass per byte
  // that differs among the keys, lowest byte first; each pass is stable.
  std::pair<double, Tag>* from = std::to_address(first);
  std::pair<double, Tag>* to = scratch.data();
  for (std::size_t b = 0; b < 8; ++b) {
    auto& count = counts[b];
    const auto bits = std::bit_cast<std::uint64_t>(from[0].first);
    if (count[(bits >> (8 * b)) & 0xff] == n)
      continue;  // every key has this byte
    std::uint32_t sum = 0;
    for (auto& c : count)
      sum += std::exchange(c, sum);  // each byte's first place
    for (std::size_t i = 0; i < n; ++i) {
      const auto key = std::bit_cast<std::uint64_t>(from[i].first);
      to[count[(key >> (8 * b)) & 0xff]++] = from[i];
    }
    std::swap(from, to);
  }
  if (from != std::to_address(first))
    std::copy(from, from + n, first);
}

}  // namespace trainsim::analysis
