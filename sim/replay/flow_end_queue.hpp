#pragma once
// The isolated runner's flows in flight, popped by (end, flow index): the
// next to finish first, ties in the order they started (isolated_run.hpp).
//
// A binary heap did this at ~100 instructions a pop for the spanning rings'
// few hundred flows in flight. But the runner dates a flow as
// (start + latency) + moving, starts come in non-decreasing order (a flow
// starts at the start of the run or at the end just popped) and flow indices
// increase: flows with the same two terms therefore end in non-decreasing
// order (rounding is monotone), each one after the one pushed before it. So
// such flows wait in a lane per pair of terms, a FIFO already sorted by (end,
// index), and a pop compares the few lanes' heads and the heap's top, the
// heap keeping the rest (flows resumed in flight, lanes beyond kLanes). A
// push into a lane checks that it stays sorted (else the flow goes to the
// heap), so every pop is the minimum of all that wait: the heap's pops,
// exactly.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace trainsim::sim {

class FlowEndQueue {
 public:
  using Entry = std::pair<double, std::uint32_t>;  // (end, flow index)

  // A flow dated (start + latency_s) + moving_s.
  void push(Entry entry, double latency_s, double moving_s) {
    const std::uint64_t latency = std::bit_cast<std::uint64_t>(latency_s);
    const std::uint64_t moving = std::bit_cast<std::uint64_t>(moving_s);
    for (std::size_t l = 0; l < lanes_; ++l) {
      Lane& lane = lane_[l];
      if (lane.latency_bits != latency || lane.moving_bits != moving)
        continue;
      if (!lane.entries.empty() && entry < lane.entries.back())
        return push(entry);  // out of order (an earlier start than the last one's)
      lane.entries.push_back(entry);
      ++size_;
      return;
    }
    if (lanes_ == kLanes)
      return push(entry);
    Lane& lane = lane_[lanes_++];
    lane.latency_bits = latency;
    lane.moving_bits = moving;
    lane.entries.push_back(entry);
    ++size_;
  }

  // Any other flow.
  void push(Entry entry) {
    heap_.push_back(entry);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    ++size_;
  }

  bool empty() const { return size_ == 0; }

  // The next to finish (not empty()).
  Entry top() const {
    const Entry* best = heap_.empty() ? nullptr : &heap_.front();
    for (std::size_t l = 0; l < lanes_; ++l) {
      const Lane& lane = lane_[l];
      if (lane.head < lane.entries.size() && (best == nullptr || lane.entries[lane.head] < *best))
        best = &lane.entries[lane.head];
    }
    return *best;
  }

  Entry pop() {
    const Entry* best = heap_.empty() ? nullptr : &heap_.front();
    Lane* from = nullptr;
    for (std::size_t l = 0; l < lanes_; ++l) {
      Lane& lane = lane_[l];
      if (lane.head < lane.entries.size() && (best == nullptr || lane.entries[lane.head] < *best)) {
        best = &lane.entries[lane.head];
        from = &lane;
      }
    }
    const Entry entry = *best;
    --size_;
    if (from == nullptr) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
    } else if (++from->head == from->entries.size()) {
      from->entries.clear();
      from->head = 0;
    }
    return entry;
  }

  void clear() {
    for (std::size_t l = 0; l < lanes_; ++l) {
      lane_[l].entries.clear();
      lane_[l].head = 0;
    }
    lanes_ = 0;
    heap_.clear();
    size_ = 0;
  }

 private:
  // A ring or a tree has a few distinct flow durations; a pop reads every
  // lane's head.
  static constexpr std::size_t kLanes = 4;
  struct Lane {
    std::uint64_t latency_bits = 0;
    std::uint64_t moving_bits = 0;
    std::vector<Entry> entries;  // [head, end) wait, sorted by (end, index); emptied when all popped
    std::size_t head = 0;
  };
  std::array<Lane, kLanes> lane_;
  std::size_t lanes_ = 0;
  std::vector<Entry> heap_;  // a min-heap
  std::size_t size_ = 0;
};

}  // namespace trainsim::sim
