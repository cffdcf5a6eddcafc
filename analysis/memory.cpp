#include "analysis/memory.hpp"

#include "analysis/fold_classes.hpp"
#include "analysis/memory_curve.hpp"

namespace trainsim::analysis {

const std::vector<MemorySample>& GpuMemory::samples() const {
  static const std::vector<MemorySample> kNone;
  return curve ? *curve : kNone;
}

MemoryReport memory_over_time(const workloads::TaskGraph& graph, const Timeline& timeline,
                              const platforms::ClusterSpec& cluster) {
  return memory_over_time(graph, timeline, cluster,
                          GpuClasses::of(graph, timeline, static_cast<std::size_t>(graph.gpu_count)));
}

MemoryReport memory_over_time(const workloads::TaskGraph& graph, const Timeline& timeline,
                              const platforms::ClusterSpec& cluster, const GpuClasses& classes) {
  return memory_over_time(memory_curves(graph, timeline, classes), cluster);
}

MemoryReport memory_over_time(const MemoryCurves& curves, const platforms::ClusterSpec& cluster) {
  MemoryReport report;
  report.model =
      "trainsim memory model: weights, gradients and optimizer state (by ZeRO stage), activations (by "
      "recomputation, sequence / context parallelism, FlashAttention), collective buffers";
  workloads::MemoryBreakdown resident_any;
  for (const auto& c : curves.gpus)
    for (int k = 0; k < workloads::kMemoryKindCount; ++k)
      resident_any.bytes[k] += c.resident.bytes[k];
  for (int k = 0; k < workloads::kMemoryKindCount; ++k)
    if (resident_any.bytes[k] > 0)
      report.components.emplace_back(workloads::to_string(static_cast<workloads::MemoryKind>(k)));
  report.gpus.reserve(curves.gpus.size());
  for (const auto& c : curves.gpus) {
    GpuMemory m;
    m.gpu = c.gpu;
    m.resident_bytes = c.resident.total();
    m.peak_bytes = c.peak_bytes;
    m.peak_time_s = c.peak_time_s;
    m.capacity_bytes = cluster.gpu_of(c.gpu).hbm_bytes;
    m.curve = c.curve;  // the curve's points, shared, not a copy
    report.gpus.push_back(std::move(m));
  }
  report.peak_bytes = curves.peak_bytes;
  report.peak_gpu = curves.peak_gpu;
  return report;
}

}  // namespace trainsim::analysis
