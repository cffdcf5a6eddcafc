#pragma once
// Sorting a link's flow events, which arrive nearly in order: a link's
// flows are listed as they end, so their ends are out of place only where a
// collective computed alone recorded its flows at its own end, and their
// starts only by the flows that overlap them (a handful on most links).
// std::sort pays n log n comparisons whatever the order; an insertion sort
// pays one per element and one per element it passes. On the FSDP run's
// link lists the insertion sort took a fraction of std::sort's instructions
// (docs/performance.md, "FSDP: link events sorted as they come").
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

namespace trainsim::analysis {

// Sorts [first, last) by operator<: an insertion sort while the elements it
// moves stay under kMovesPerElement per element, else std::sort from where
// it stands. Both sort, so the result is the one sorted sequence whenever
// equal elements are indistinguishable (pairs of a time and a place, or of
// a time and a sign): the same bits as std::sort's.
template <class It>
void sort_nearly_sorted(It first, It last) {
  constexpr std::ptrdiff_t kMovesPerElement = 8;
  std::ptrdiff_t budget = kMovesPerElement * (last - first);
  if (first == last)
    return;
  for (It i = std::next(first); i != last; ++i) {
    if (!(*i < *std::prev(i)))
      continue;
    auto value = std::move(*i);
    It j = i;
    do {
      *j = std::move(*std::prev(j));
      --j;
      if (--budget < 0) {
        *j = std::move(value);
        std::sort(first, last);
        return;
      }
    } while (j != first && value < *std::prev(j));
    *j = std::move(value);
  }
}

}  // namespace trainsim::analysis
