#include "analysis/fold_images.hpp"

#include <limits>

namespace trainsim::analysis {

template <class Index>
std::optional<PermutationPowers> PermutationPowers::build(const std::vector<Index>& image, int m) {
  constexpr auto kUnseen = std::numeric_limits<std::uint32_t>::max();
  if (m < 1 || m >= kFixed || image.size() >= kUnseen)
    return std::nullopt;
  const auto n = static_cast<std::uint32_t>(image.size());
  PermutationPowers p;
  p.m_ = static_cast<std::uint32_t>(m);
  p.where_.assign(n, kUnseen);
  p.pos_.assign(n, kFixed);
  p.cycle_.reserve(n);
  for (std::uint32_t x = 0; x < n; ++x) {
    if (p.where_[x] != kUnseen)
      continue;
    if (static_cast<std::size_t>(image[x]) == x) {
      p.where_[x] = 0;  // its own image: pos_ stays kFixed, cycle_ is not read
      continue;
    }
    const auto begin = p.cycle_.size();
    std::uint32_t y = x;
    do {
      if (p.where_[y] != kUnseen || p.cycle_.size() - begin >= p.m_)
        return std::nullopt;
      p.where_[y] = static_cast<std::uint32_t>(p.cycle_.size());
      p.pos_[y] = static_cast<std::uint16_t>(p.cycle_.size() - begin);
      p.cycle_.push_back(y);
      const auto next = static_cast<std::size_t>(image[y]);
      if (next >= n)
        return std::nullopt;
      y = static_cast<std::uint32_t>(next);
    } while (y != x);
    if (p.cycle_.size() - begin != p.m_)
      return std::nullopt;
  }
  return p;
}

std::optional<PermutationPowers> PermutationPowers::of(const std::vector<std::size_t>& image, int m) {
  return build(image, m);
}

std::optional<PermutationPowers> PermutationPowers::of(const std::vector<std::uint32_t>& image, int m) {
  return build(image, m);
}

std::optional<PermutationPowers> PermutationPowers::of(const std::vector<int>& image, int m) {
  for (const int x : image)
    if (x < 0)
      return std::nullopt;
  return build(image, m);
}

}  // namespace trainsim::analysis
