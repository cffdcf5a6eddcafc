#include "analysis/gpu_power.hpp"

#include <algorithm>

namespace trainsim::analysis {
namespace {

// A change of what one GPU does: a compute task starts (power > 0) or ends
// (power < 0), or a communication starts (+1) or ends (-1).
struct Change {
  double at_s;
  double compute_W;
  int communications;
};

}  // namespace

std::vector<GpuActivity> gpu_activity(const workloads::TaskGraph& graph, const Timeline& timeline,
                                      const platforms::ClusterSpec& cluster) {
  const auto gpus = static_cast<std::size_t>(cluster.gpu_count());
  std::vector<std::vector<Change>> changes(gpus);
  auto communicating = [&](int gpu, const TaskRecord& r) {
    if (gpu < 0 || static_cast<std::size_t>(gpu) >= gpus)
      return;
    changes[static_cast<std::size_t>(gpu)].push_back({r.start_s, 0, +1});
    changes[static_cast<std::size_t>(gpu)].push_back({r.end_s, 0, -1});
  };
  for (const auto& r : timeline.records) {
    if (r.end_s <= r.start_s)
      continue;
    const auto& task = graph[r.task];
    if (workloads::is_compute(task.kind)) {
      const double watts = cluster.gpu_of(r.gpu).compute_power_W(task.memory_bound_fraction);
      changes[static_cast<std::size_t>(r.gpu)].push_back({r.start_s, watts, 0});
      changes[static_cast<std::size_t>(r.gpu)].push_back({r.end_s, -watts, 0});
      continue;
    }
    communicating(r.gpu, r);
    // A send is recorded on its sender; the receiver runs NCCL's receive.
    if (task.kind == workloads::TaskKind::send)
      communicating(task.peer, r);
  }
  std::vector<GpuActivity> out(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    const auto& spec = cluster.gpu_of(static_cast<int>(g));
    auto& list = changes[g];
    std::sort(list.begin(), list.end(), [](const Change& a, const Change& b) { return a.at_s < b.at_s; });
    list.push_back({std::max(timeline.end_s, list.empty() ? 0.0 : list.back().at_s), 0, 0});
    auto& a = out[g];
    double now = 0, compute_W = 0;
    int computes = 0, communications = 0;
    for (const auto& c : list) {
      const double span = c.at_s - now;
      if (span > 0) {
        if (computes > 0) {
          a.compute_s += span;
          a.energy_J += compute_W * span;
        } else if (communications > 0) {
          a.communication_s += span;
          a.energy_J += spec.communication_power_W * span;
        } else {
          a.idle_s += span;
          a.energy_J += spec.idle_power_W * span;
        }
        now = c.at_s;
      }
      if (c.compute_W > 0) {
        ++computes;
        compute_W = c.compute_W;
      } else if (c.compute_W < 0) {
        --computes;
      }
      communications += c.communications;
    }
  }
  return out;
}

}  // namespace trainsim::analysis
