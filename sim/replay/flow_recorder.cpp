#include "sim/replay/flow_recorder.hpp"

namespace trainsim::sim {

void FlowRecorder::number_new_route(Route& route) {
  route.timeline_first = static_cast<std::uint32_t>(timeline_.flow_links.size());
  for (const std::uint32_t id : RouteTable::recorded_links(route)) {
    if (timeline_link_.size() <= id)
      timeline_link_.resize(routes_.link_count(), Route::kUnrecorded);
    auto& index = timeline_link_[id];
    if (index == Route::kUnrecorded) {
      index = static_cast<std::uint32_t>(timeline_.links.size());
      const auto* link = routes_.link(id);
      timeline_.links.push_back({link->get_name(), link->get_bandwidth(), link->get_latency()});
      link_of_index_.push_back(link);
    }
    timeline_.flow_links.push_back(index);
  }
}

std::size_t FlowRecorder::start(workloads::TaskId task, int src_gpu, int dst_gpu, Route& route, double bytes,
                                double start_s) {
  const analysis::FlowRecord flow = make(task, src_gpu, dst_gpu, route, bytes, start_s);
  if (!free_.empty()) {
    const std::size_t handle = free_.back();
    free_.pop_back();
    open_[handle] = flow;
    return handle;
  }
  open_.push_back(flow);
  return open_.size() - 1;
}

void FlowRecorder::finish(std::size_t handle, double end_s) {
  analysis::FlowRecord flow = open_[handle];
  free_.push_back(handle);
  flow.end_s = end_s;
  timeline_.flows.push_back(flow);
}

}  // namespace trainsim::sim
