#pragma once
// Records every network flow of the replay into the timeline: endpoints,
// bytes, start and end, and the links it crossed, so that analysis/ can
// compute link loads without SimGrid. A route is copied into the timeline
// the first time a flow on it is recorded, and links are numbered on first
// use.
#include <cstdint>
#include <vector>

#include "analysis/timeline.hpp"
#include "sim/replay/route_table.hpp"

namespace trainsim::sim {

class FlowRecorder {
 public:
  FlowRecorder(analysis::Timeline& timeline, const RouteTable& routes)
      : timeline_(timeline), routes_(routes) {}

  // A flow of `bytes` on `route` started at `start_s` for `task`, recorded
  // between src_gpu and dst_gpu (a leg to or from an NVSwitch is recorded
  // on its GPU); returns the handle to pass to finish().
  std::size_t start(workloads::TaskId task, int src_gpu, int dst_gpu, Route& route, double bytes,
                    double start_s);
  void finish(std::size_t handle, double end_s);
  // Copies the route into the timeline now if it is not there yet: links are
  // numbered in the order flows first use them, and a collective computed
  // in isolation records its flows only when it ends.
  void number_links(Route& route) {
    if (route.timeline_first == Route::kUnrecorded)
      number_new_route(route);
  }
  // A flow whose start and end are both known (computed in isolation).
  // Inline: scale-16k records 2.9M of them, a call each from a loop over an
  // isolated run's flows.
  void record(workloads::TaskId task, int src_gpu, int dst_gpu, Route& route, double bytes, double start_s,
              double end_s) {
    analysis::FlowRecord flow = make(task, src_gpu, dst_gpu, route, bytes, start_s);
    flow.end_s = end_s;
    timeline_.flows.push_back(flow);
  }
  // The SimGrid link of each of the timeline's links (the fold's expansion
  // maps them onto their images).
  const std::vector<const simgrid::s4u::Link*>& link_of_index() const { return link_of_index_; }

 private:
  analysis::FlowRecord make(workloads::TaskId task, int src_gpu, int dst_gpu, Route& route, double bytes,
                            double start_s) {
    number_links(route);
    return {task, src_gpu, dst_gpu, bytes, start_s, start_s, route.timeline_first, route.recorded_count};
  }
  void number_new_route(Route& route);

  analysis::Timeline& timeline_;
  const RouteTable& routes_;
  // Flows in flight, by handle; a finished flow is appended to the timeline.
  std::vector<analysis::FlowRecord> open_;
  std::vector<std::size_t> free_;
  // Timeline link index of each RouteTable link id (kUnrecorded: not yet).
  std::vector<std::uint32_t> timeline_link_;
  std::vector<const simgrid::s4u::Link*> link_of_index_;
};

}  // namespace trainsim::sim
