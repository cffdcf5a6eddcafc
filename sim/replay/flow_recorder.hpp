#pragma once
// Records every network flow the replay starts into the timeline: endpoints,
// bytes, start and end, and the links it crossed (SimGrid's route), so that
// analysis/ can compute link loads without SimGrid. Routes are looked up once
// per (source, destination) pair and links are numbered on first use.
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/timeline.hpp"

namespace trainsim::sim {

class FlowRecorder {
 public:
  explicit FlowRecorder(analysis::Timeline& timeline) : timeline_(timeline) {}

  // A flow of `bytes` from endpoint `src_endpoint` (host `src`) to
  // `dst_endpoint` starts now for `task`, recorded between src_gpu and
  // dst_gpu (endpoints are GPU ranks, or an NVSwitch of an in-switch
  // reduction, recorded on its GPU); returns the handle to pass to finish().
  std::size_t start(workloads::TaskId task, int src_endpoint, int dst_endpoint, int src_gpu, int dst_gpu,
                    simgrid::s4u::Host* src, simgrid::s4u::Host* dst, double bytes, double now_s);
  void finish(std::size_t handle, double now_s);

 private:
  struct Route {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
  };
  const Route& route(int src_gpu, int dst_gpu, simgrid::s4u::Host* src, simgrid::s4u::Host* dst);

  analysis::Timeline& timeline_;
  // Flows in flight, by handle; a finished flow is appended to the timeline.
  std::vector<analysis::FlowRecord> open_;
  std::vector<std::size_t> free_;
  std::unordered_map<std::uint64_t, Route> routes_;
  std::unordered_map<const simgrid::s4u::Link*, std::uint32_t> link_index_;
};

}  // namespace trainsim::sim
