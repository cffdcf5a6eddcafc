#include "analysis/memory.hpp"

#include <algorithm>

namespace trainsim::analysis {

MemoryReport memory_over_time(const workloads::TaskGraph& graph, const Timeline& timeline,
                              const MemoryModel& model, const platforms::ClusterSpec& cluster) {
  MemoryReport report;
  report.model = model.description();
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  // (time, delta) per GPU; frees sort before allocations at the same time,
  // as a caching allocator reuses memory released just before.
  std::vector<std::vector<std::pair<double, double>>> events(gpus);
  for (const auto& r : timeline.records) {
    const auto effect = model.effect(graph[r.task], r.gpu);
    auto& ev = events[static_cast<std::size_t>(r.gpu)];
    if (effect.alloc_at_start_bytes != 0)
      ev.emplace_back(r.start_s, effect.alloc_at_start_bytes);
    if (effect.free_at_end_bytes != 0)
      ev.emplace_back(r.end_s, -effect.free_at_end_bytes);
  }
  report.gpus.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& m = report.gpus[g];
    m.gpu = static_cast<int>(g);
    for (const auto& [name, bytes] : model.resident_bytes(m.gpu)) {
      m.resident_bytes += bytes;
      if (g == 0)
        report.components.push_back(name);
    }
    m.capacity_bytes = cluster.gpu_of(m.gpu).hbm_bytes;
    auto& ev = events[g];
    std::stable_sort(ev.begin(), ev.end());
    double current = m.resident_bytes;
    m.samples.push_back({0, current});
    m.peak_bytes = current;
    for (std::size_t i = 0; i < ev.size();) {
      const double time = ev[i].first;
      for (; i < ev.size() && ev[i].first == time; ++i) {
        current += ev[i].second;
        if (current > m.peak_bytes) {
          m.peak_bytes = current;
          m.peak_time_s = time;
        }
      }
      if (m.samples.back().time_s == time)
        m.samples.back().bytes = current;
      else if (m.samples.back().bytes != current)
        m.samples.push_back({time, current});
    }
    if (m.peak_bytes > report.peak_bytes || report.peak_gpu < 0) {
      report.peak_bytes = m.peak_bytes;
      report.peak_gpu = m.gpu;
    }
  }
  return report;
}

}  // namespace trainsim::analysis
