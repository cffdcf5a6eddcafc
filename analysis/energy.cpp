#include "analysis/energy.hpp"

#include <algorithm>
#include <stdexcept>

#include "analysis/gpu_power.hpp"

namespace trainsim::analysis {
EnergyReport analyze_energy(const workloads::TaskGraph& graph, const Timeline& timeline,
                            const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster) {
  return analyze_energy(graph, timeline, summary, bubbles, cluster,
                        GpuClasses::of(graph, timeline, static_cast<std::size_t>(cluster.gpu_count())));
}

EnergyReport analyze_energy(const workloads::TaskGraph& graph, const Timeline& timeline,
                            const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster, const GpuClasses& classes) {
  if (timeline.gpu_energy_J.size() != summary.gpus.size() || summary.gpus.empty())
    return EnergyReport{};  // not measured
  return analyze_energy(timeline, summary, bubbles, cluster, gpu_activity(graph, timeline, cluster, classes));
}

EnergyReport analyze_energy(const Timeline& timeline, const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster, const std::vector<GpuActivity>& activity) {
  EnergyReport e;
  const double t = summary.iteration_time_s;
  const std::size_t gpus = summary.gpus.size();
  e.measured = timeline.gpu_energy_J.size() == gpus && gpus > 0;
  if (!e.measured)
    return e;
  if (activity.size() < gpus)
    throw std::logic_error("energy: the GPUs' activity does not cover the summary's GPUs");
  e.gpus.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& out = e.gpus[g];
    out.gpu = static_cast<int>(g);
    out.energy_J = timeline.gpu_energy_J[g];
    out.average_power_W = t > 0 ? out.energy_J / t : 0;
    const auto& spec = cluster.gpu_of(out.gpu);
    out.communication_energy_J =
        spec.communication_power_W * (activity[g].communication_s + activity[g].waiting_s);
    out.idle_energy_J = out.communication_energy_J + spec.idle_power_W * activity[g].idle_s;
    e.energy_J += out.energy_J;
    e.idle_energy_J += out.idle_energy_J;
    e.communication_energy_J += out.communication_energy_J;
    if (g < bubbles.gpus.size())
      for (BubbleCause c : reported_causes(bubbles)) {
        const auto i = static_cast<std::size_t>(c);
        // The own optimizer step computes at full power: only the wait for
        // other GPUs' optimizer steps is idle.
        const auto& b = bubbles.gpus[g];
        const double own = c == BubbleCause::optimizer ? b.optimizer_s : 0;
        // Nothing runs: idle power; NCCL runs (moving data or waiting in it
        // for peers): communication power.
        const double idle_s = std::max(0.0, b.idle_part_s[i] - b.waiting_part_s[i]);
        const double nccl_s = std::max(0.0, b.cause_s[i] - own - idle_s);
        e.idle_energy_by_cause_J[i] += spec.communication_power_W * nccl_s + spec.idle_power_W * idle_s;
      }
  }
  e.energy_per_token_J = summary.tokens_per_iteration > 0 ? e.energy_J / summary.tokens_per_iteration : 0;
  e.cluster_power_W = t > 0 ? e.energy_J / t : 0;
  e.average_power_per_gpu_W = e.cluster_power_W / static_cast<double>(gpus);
  e.idle_energy_fraction = e.energy_J > 0 ? e.idle_energy_J / e.energy_J : 0;
  return e;
}

}  // namespace trainsim::analysis
