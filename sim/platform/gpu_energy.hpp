#pragma once
// GPU power through SimGrid's host energy plugin: each GPU host draws its
// catalogue idle power when it runs no kernel and its maximum power while a
// compute op runs (the plugin integrates power over time per host).
// Communication kernels are not charged above idle: NCCL's copy engines and
// few SMs draw far less than matmuls, and the catalogue has no figure for it.
#include <simgrid/s4u/Host.hpp>

#include <vector>

#include "platforms/gpu_spec.hpp"

namespace trainsim::sim {

class ClusterZone;

// Turns the plugin on; call after the engine exists, before any host.
void enable_gpu_energy();
// Sets the host's power profile from the GPU; call before the host is sealed.
// A host with several pstates (slowed GPUs, sim/perturbations/driver.hpp)
// draws the same power in each: the catalogue has no figure per clock.
void set_gpu_power(simgrid::s4u::Host* host, const platforms::GpuSpec& gpu, std::size_t pstates = 1);
// Joules each GPU consumed since the start of the simulation, by GPU rank.
std::vector<double> consumed_energy_J(const ClusterZone& zone);

}  // namespace trainsim::sim
