#pragma once
// Sorting what arrives nearly in order, such as a link's flow events: a link's
// flows are listed as they end, so their ends are out of place only where a
// collective computed alone recorded its flows at its own end, and their
// starts only by the flows that overlap them (a handful on most links).
// std::sort pays n log n comparisons whatever the order; an insertion sort
// pays one per element and one per element it passes. On the FSDP run's
// link lists the insertion sort took a fraction of std::sort's instructions
// (docs/performance.md, "FSDP: link events sorted as they come").
#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <utility>

namespace trainsim::platforms {

// Sorts [first, last) by `less`, stably: an insertion sort while the
// elements it moves stay under kMovesPerElement per element, else
// std::stable_sort from where it stands. Both are stable sorts, so the
// result is the one stable order whichever finishes: the same bits as
// std::stable_sort's, and as std::sort's where equal elements are
// indistinguishable (pairs of a time and a place, or of a time and a sign).
// Used on a link's flow events (analysis) and on the task graph's memory
// events, which its builders add near their task's place (TaskGraph::seal).
template <class It, class Less = std::less<>>
void sort_nearly_sorted(It first, It last, Less less = {}) {
  constexpr std::ptrdiff_t kMovesPerElement = 8;
  std::ptrdiff_t budget = kMovesPerElement * (last - first);
  if (first == last)
    return;
  for (It i = std::next(first); i != last; ++i) {
    if (!less(*i, *std::prev(i)))
      continue;
    auto value = std::move(*i);
    It j = i;
    do {
      *j = std::move(*std::prev(j));
      --j;
      if (--budget < 0) {
        *j = std::move(value);
        std::stable_sort(first, last, less);
        return;
      }
    } while (j != first && less(value, *std::prev(j)));
    *j = std::move(value);
  }
}

}  // namespace trainsim::platforms
