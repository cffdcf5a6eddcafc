#pragma once
// The images of a folded replay's records (docs/performance.md, "The fold"):
// a folded replay records the representatives' tasks and flows once; each
// record of a class stands for m records, its images under the powers of the
// fold's rotation. FoldImages holds what maps a recorded record to its image
// k (0 <= k < m) without materialising the images: the powers of the
// rotation on tasks and on flow endpoints, and the images of every recorded
// route. RecordList (analysis/record_list.hpp) reads the images through it
// while the analyses and writers stream over them.
#include <cstdint>
#include <optional>
#include <vector>

#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// The powers of a permutation whose cycles all have length m or 1 (the
// rotation of a fold acts freely on the replicas' tasks and GPUs; a spanning
// collective is its own image). power(x, k) is the permutation applied k
// times to x, in O(1): the cycles are laid out one after the other, each in
// the order the permutation walks it.
class PermutationPowers {
 public:
  // nullopt when a cycle of `image` has a length other than m or 1.
  static std::optional<PermutationPowers> of(const std::vector<std::size_t>& image, int m);
  static std::optional<PermutationPowers> of(const std::vector<int>& image, int m);
  static std::optional<PermutationPowers> of(const std::vector<std::uint32_t>& image, int m);

  // 0 <= k < m.
  std::uint32_t power(std::size_t x, int k) const {
    const std::uint32_t p = pos_[x];
    if (p == kFixed)
      return static_cast<std::uint32_t>(x);
    std::uint32_t q = p + static_cast<std::uint32_t>(k);
    if (q >= m_)
      q -= m_;
    return cycle_[where_[x] - p + q];
  }
  bool fixed(std::size_t x) const { return pos_[x] == kFixed; }
  // Asks for x's position ahead of fixed(x) (RecordPrefetch; inlined, as
  // that says why).
  [[gnu::always_inline]] void prefetch(std::size_t x) const { __builtin_prefetch(pos_.data() + x); }
  // The first element of x's cycle, its smallest (x when fixed): one element
  // per cycle, e.g. the one an archive keeps a class's entry under.
  std::uint32_t first(std::size_t x) const {
    const std::uint32_t p = pos_[x];
    return p == kFixed ? static_cast<std::uint32_t>(x) : cycle_[where_[x] - p];
  }
  std::size_t size() const { return where_.size(); }

 private:
  template <class Index>
  static std::optional<PermutationPowers> build(const std::vector<Index>& image, int m);

  static constexpr std::uint16_t kFixed = 0xffff;

  std::uint32_t m_ = 1;
  std::vector<std::uint32_t> cycle_;  // the cycles of length m, one after the other
  std::vector<std::uint32_t> where_;  // each element's position in cycle_
  std::vector<std::uint16_t> pos_;    // its position in its cycle (kFixed: its own image)
};

struct FoldImages {
  static constexpr std::uint32_t kNoRoute = static_cast<std::uint32_t>(-1);  // route_slot: none

  int order = 1;  // m: each record of a class stands for m records
  // Tasks: a fixed task (a spanning collective) has one record per member
  // GPU already; another task's records have m images.
  PermutationPowers tasks;
  // Flow endpoints and record GPUs: GPU ranks, then the NVSwitch endpoints.
  PermutationPowers endpoints;
  // Each recorded route's m images, as Timeline::flow_links offsets:
  // route_images[route_slot[first_link] * m + k].
  std::vector<std::uint32_t> route_slot;
  std::vector<std::uint32_t> route_images;

  std::uint32_t route_image(std::uint32_t first_link, int k) const {
    return route_images[static_cast<std::size_t>(route_slot[first_link]) * static_cast<std::size_t>(order) +
                        static_cast<std::size_t>(k)];
  }
};

}  // namespace trainsim::analysis
