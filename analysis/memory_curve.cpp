#include "analysis/memory_curve.hpp"

#include <algorithm>
#include <limits>

namespace trainsim::analysis {

MemoryCurves memory_curves(const workloads::TaskGraph& graph, const Timeline& timeline) {
  using workloads::MemoryEvent;
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  // When each task ran (a collective's records share one start and end).
  constexpr double kNever = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> start(graph.size(), kNever), end(graph.size(), kNever);
  for (const auto& r : timeline.records) {
    start[r.task] = r.start_s;
    end[r.task] = r.end_s;
  }

  struct Change {
    double time_s;
    double bytes;
    workloads::MemoryKind kind;
  };
  std::vector<std::vector<Change>> changes(gpus);
  for (const MemoryEvent& e : graph.memory) {
    const double t = e.at == MemoryEvent::At::start ? start[e.task] : end[e.task];
    if (t != t || e.gpu < 0 || static_cast<std::size_t>(e.gpu) >= gpus)
      continue;  // a task that did not run (a partial timeline)
    changes[static_cast<std::size_t>(e.gpu)].push_back({t, e.bytes, e.kind});
  }

  MemoryCurves curves;
  curves.gpus.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& c = curves.gpus[g];
    c.gpu = static_cast<int>(g);
    if (g < graph.resident_memory.size())
      c.resident = graph.resident_memory[g];
    auto& list = changes[g];
    std::stable_sort(list.begin(), list.end(), [](const Change& a, const Change& b) {
      if (a.time_s != b.time_s)
        return a.time_s < b.time_s;
      return a.bytes < 0 && b.bytes >= 0;
    });
    workloads::MemoryBreakdown current = c.resident;
    c.peak_bytes = current.total();
    c.at_peak = current;
    c.points.push_back({0, c.peak_bytes});
    for (const Change& change : list) {
      current[change.kind] += change.bytes;
      const double total = current.total();
      if (total > c.peak_bytes) {
        c.peak_bytes = total;
        c.peak_time_s = change.time_s;
        c.at_peak = current;
      }
      if (c.points.back().time_s == change.time_s)
        c.points.back().bytes = total;
      else
        c.points.push_back({change.time_s, total});
    }
    if (curves.peak_gpu < 0 || c.peak_bytes > curves.peak_bytes) {
      curves.peak_bytes = c.peak_bytes;
      curves.peak_gpu = c.gpu;
    }
  }
  return curves;
}

}  // namespace trainsim::analysis
