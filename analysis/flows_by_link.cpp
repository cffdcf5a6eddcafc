#include "analysis/flows_by_link.hpp"

#include <limits>
#include <stdexcept>

namespace trainsim::analysis {

FlowsByLink::FlowsByLink(const Timeline& timeline) : begin_(timeline.links.size() + 1, 0) {
  if (timeline.flows.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("more than 2^32 flows in one timeline");
  // Count, turn the counts into offsets, then fill in flow order.
  for (const auto& flow : timeline.flows)
    for (std::uint32_t k = 0; k < flow.link_count; ++k)
      ++begin_[timeline.flow_links[flow.first_link + k] + 1];
  for (std::size_t l = 1; l < begin_.size(); ++l)
    begin_[l] += begin_[l - 1];
  flows_.resize(begin_.back());
  std::vector<std::size_t> next(begin_.begin(), begin_.end() - 1);
  for (std::size_t f = 0; f < timeline.flows.size(); ++f) {
    const auto& flow = timeline.flows[f];
    for (std::uint32_t k = 0; k < flow.link_count; ++k)
      flows_[next[timeline.flow_links[flow.first_link + k]]++] = static_cast<std::uint32_t>(f);
  }
}

}  // namespace trainsim::analysis
