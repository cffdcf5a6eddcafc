#include "analysis/energy.hpp"

#include <algorithm>

namespace trainsim::analysis {

EnergyReport analyze_energy(const Timeline& timeline, const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster) {
  EnergyReport e;
  const double t = summary.iteration_time_s;
  const std::size_t gpus = summary.gpus.size();
  e.measured = timeline.gpu_energy_J.size() == gpus && gpus > 0;
  if (!e.measured)
    return e;
  e.gpus.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& out = e.gpus[g];
    out.gpu = static_cast<int>(g);
    out.energy_J = timeline.gpu_energy_J[g];
    out.average_power_W = t > 0 ? out.energy_J / t : 0;
    const double idle_W = cluster.gpu_of(out.gpu).idle_power_W;
    out.idle_energy_J = idle_W * std::max(0.0, t - summary.gpus[g].compute_s);
    e.energy_J += out.energy_J;
    e.idle_energy_J += out.idle_energy_J;
    if (g < bubbles.gpus.size())
      for (BubbleCause c : kBubbleCauses) {
        const auto i = static_cast<std::size_t>(c);
        // The own optimizer step computes at full power: only the wait for
        // other GPUs' optimizer steps is idle.
        const double own = c == BubbleCause::optimizer ? bubbles.gpus[g].optimizer_s : 0;
        e.idle_energy_by_cause_J[i] += idle_W * std::max(0.0, bubbles.gpus[g].cause_s[i] - own);
      }
  }
  e.energy_per_token_J = summary.tokens_per_iteration > 0 ? e.energy_J / summary.tokens_per_iteration : 0;
  e.cluster_power_W = t > 0 ? e.energy_J / t : 0;
  e.average_power_per_gpu_W = e.cluster_power_W / static_cast<double>(gpus);
  e.idle_energy_fraction = e.energy_J > 0 ? e.idle_energy_J / e.energy_J : 0;
  return e;
}

}  // namespace trainsim::analysis
