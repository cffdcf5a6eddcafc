#pragma once
// A folded replay's per-task arrays hold the replayed tasks only; a replayed
// task's slot in them is its rank among the replayed tasks. ReplayedIndex
// answers that rank in O(1) from one bit per task of the whole graph and a
// 32-bit running count per 64 tasks (~0.25 B per task), where a 32-bit index
// per task took 4 B (docs/performance.md, "Towards 1,048,576 GPUs: the
// replay's and the fold's per-task arrays").
#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainsim::sim {

class ReplayedIndex {
 public:
  ReplayedIndex() = default;
  // replayed[id] != 0 for each replayed task.
  explicit ReplayedIndex(const std::vector<char>& replayed) {
    words_.assign((replayed.size() + 63) / 64, {});
    std::uint32_t count = 0;
    for (std::size_t w = 0; w < words_.size(); ++w) {
      words_[w].before = count;
      const std::size_t end = std::min(replayed.size(), w * 64 + 64);
      for (std::size_t id = w * 64; id < end; ++id)
        if (replayed[id])
          words_[w].bits |= std::uint64_t{1} << (id % 64);
      count += static_cast<std::uint32_t>(ones(words_[w].bits));
    }
  }
  bool empty() const { return words_.empty(); }
  // The rank of replayed task `id` among the replayed tasks (for a task not
  // replayed: the rank the next replayed one has).
  // Inlined where it is called (GCC otherwise keeps it out of line in the
  // replay: a call per task it starts, ends or counts).
  [[gnu::always_inline]] std::size_t operator[](std::size_t id) const {
    const Word& w = words_[id / 64];
    const std::uint64_t below = (std::uint64_t{1} << (id % 64)) - 1;
    return w.before + ones(w.bits & below);
  }

 private:
  // std::popcount, inline: without -mpopcnt GCC calls libgcc's
  // __popcountdi2 (about 25 instructions with the call), and the replay asks
  // once per task it starts, ends or counts (scale-16k: ~1.2M times).
  [[gnu::always_inline]] static std::size_t ones(std::uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555ULL;
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<std::size_t>((x * 0x0101010101010101ULL) >> 56);
  }

  struct Word {
    std::uint64_t bits = 0;    // which of these 64 tasks are replayed
    std::uint32_t before = 0;  // replayed tasks before them
  };
  std::vector<Word> words_;
};

}  // namespace trainsim::sim
