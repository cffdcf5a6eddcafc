#include "sim/replay/flow_recorder.hpp"

namespace trainsim::sim {

const FlowRecorder::Route& FlowRecorder::route(int src_gpu, int dst_gpu, simgrid::s4u::Host* src,
                                               simgrid::s4u::Host* dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src_gpu)) << 32) |
                            static_cast<std::uint32_t>(dst_gpu);
  auto it = routes_.find(key);
  if (it != routes_.end())
    return it->second;
  std::vector<simgrid::s4u::Link*> links;
  double latency_s = 0;
  src->route_to(dst, links, &latency_s);
  Route r{static_cast<std::uint32_t>(timeline_.flow_links.size()), static_cast<std::uint32_t>(links.size())};
  for (const auto* link : links) {
    auto [pos, inserted] = link_index_.emplace(link, static_cast<std::uint32_t>(timeline_.links.size()));
    if (inserted)
      timeline_.links.push_back({link->get_name(), link->get_bandwidth(), link->get_latency()});
    timeline_.flow_links.push_back(pos->second);
  }
  return routes_.emplace(key, r).first->second;
}

std::size_t FlowRecorder::start(workloads::TaskId task, int src_endpoint, int dst_endpoint, int src_gpu,
                                int dst_gpu, simgrid::s4u::Host* src, simgrid::s4u::Host* dst, double bytes,
                                double now_s) {
  const Route& r = route(src_endpoint, dst_endpoint, src, dst);
  analysis::FlowRecord flow{task, src_gpu, dst_gpu, bytes, now_s, now_s, r.first, r.count};
  if (!free_.empty()) {
    const std::size_t handle = free_.back();
    free_.pop_back();
    open_[handle] = flow;
    return handle;
  }
  open_.push_back(flow);
  return open_.size() - 1;
}

void FlowRecorder::finish(std::size_t handle, double now_s) {
  analysis::FlowRecord flow = open_[handle];
  free_.push_back(handle);
  flow.end_s = now_s;
  timeline_.flows.push_back(flow);
}

}  // namespace trainsim::sim
