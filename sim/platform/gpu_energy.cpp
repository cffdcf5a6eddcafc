#include "sim/platform/gpu_energy.hpp"

#include <fmt/format.h>
#include <simgrid/plugins/energy.h>

#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {

void enable_gpu_energy() {
  sg_host_energy_plugin_init();
}

void set_gpu_power(simgrid::s4u::Host* host, const platforms::GpuSpec& gpu, std::size_t pstates) {
  // "idle:epsilon:all cores": a one-core host draws `epsilon` as soon as it
  // computes, so epsilon = max gives max power while a kernel runs.
  const std::string state =
      fmt::format("{:.17g}:{:.17g}:{:.17g}", gpu.idle_power_W, gpu.max_power_W, gpu.max_power_W);
  std::string states = state;
  for (std::size_t i = 1; i < pstates; ++i)
    states += ", " + state;
  host->set_property("wattage_per_state", states);
  host->set_property("wattage_off", fmt::format("{:.17g}", gpu.idle_power_W));
}

std::vector<double> consumed_energy_J(const ClusterZone& zone) {
  std::vector<double> joules;
  joules.reserve(static_cast<std::size_t>(zone.gpu_count()));
  for (int gpu = 0; gpu < zone.gpu_count(); ++gpu)
    joules.push_back(sg_host_get_consumed_energy(zone.host(gpu)));
  return joules;
}

}  // namespace trainsim::sim
