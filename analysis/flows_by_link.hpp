#pragma once
// Every flow that crossed each link, in flow order, as one compressed index
// (one 32-bit flow number per link a flow crossed, plus an offset per link)
// instead of a vector of intervals or flow numbers per link: at 16,384+ GPUs
// the timeline holds tens of millions of flows, each crossing 2-6 links, and
// a vector per link (48 B per crossing) was the largest allocation of a run.
#include <cstdint>
#include <span>
#include <vector>

#include "analysis/timeline.hpp"

namespace trainsim::analysis {

class FlowsByLink {
 public:
  explicit FlowsByLink(const Timeline& timeline);
  // The flows (indices into Timeline::flows) that crossed `link`, in flow order.
  std::span<const std::uint32_t> of(std::size_t link) const {
    return {flows_.data() + begin_[link], flows_.data() + begin_[link + 1]};
  }
  // The same, for a caller that reorders them in place.
  std::span<std::uint32_t> of(std::size_t link) {
    return {flows_.data() + begin_[link], flows_.data() + begin_[link + 1]};
  }

 private:
  std::vector<std::size_t> begin_;  // per link, and one past the last
  std::vector<std::uint32_t> flows_;
};

}  // namespace trainsim::analysis
