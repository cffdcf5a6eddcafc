#include "analysis/fold_images.hpp"

#include <limits>

namespace trainsim::analysis {

template <class Index>
std::optional<PermutationPowers> PermutationPowers::build(const std::vector<Index>& image, int m) {
  if (m < 1 || image.size() >= std::numeric_limits<std::uint32_t>::max())
    return std::nullopt;
  const auto n = static_cast<std::uint32_t>(image.size());
  PermutationPowers p;
  p.m_ = static_cast<std::uint32_t>(m);
  p.where_.assign(n, std::numeric_limits<std::uint32_t>::max());
  p.cycle_.reserve(n);
  std::vector<std::uint32_t> fixed;
  for (std::uint32_t x = 0; x < n; ++x) {
    if (p.where_[x] != std::numeric_limits<std::uint32_t>::max())
      continue;
    if (static_cast<std::size_t>(image[x]) == x) {
      fixed.push_back(x);
      p.where_[x] = 0;  // set below
      continue;
    }
    const auto begin = static_cast<std::uint32_t>(p.cycle_.size());
    std::uint32_t y = x;
    do {
      if (p.where_[y] != std::numeric_limits<std::uint32_t>::max() || p.cycle_.size() - begin >= p.m_)
        return std::nullopt;
      p.where_[y] = static_cast<std::uint32_t>(p.cycle_.size());
      p.cycle_.push_back(y);
      const auto next = static_cast<std::size_t>(image[y]);
      if (next >= n)
        return std::nullopt;
      y = static_cast<std::uint32_t>(next);
    } while (y != x);
    if (p.cycle_.size() - begin != p.m_)
      return std::nullopt;
  }
  p.fixed_from_ = static_cast<std::uint32_t>(p.cycle_.size());
  for (const std::uint32_t x : fixed) {
    p.where_[x] = static_cast<std::uint32_t>(p.cycle_.size());
    p.cycle_.push_back(x);
  }
  return p;
}

std::optional<PermutationPowers> PermutationPowers::of(const std::vector<std::size_t>& image, int m) {
  return build(image, m);
}

std::optional<PermutationPowers> PermutationPowers::of(const std::vector<int>& image, int m) {
  for (const int x : image)
    if (x < 0)
      return std::nullopt;
  return build(image, m);
}

}  // namespace trainsim::analysis
