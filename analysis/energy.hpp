#pragma once
// Energy of the iteration, from what SimGrid's host energy plugin measured per
// GPU (idle power while no compute kernel runs, maximum power while one
// does; sim/platform/gpu_energy.hpp), with the share drawn while GPUs idle in
// bubbles and exposed communication.
#include <vector>

#include "analysis/bubbles.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"

namespace trainsim::analysis {

struct GpuEnergy {
  int gpu = 0;
  double energy_J = 0;         // measured by SimGrid
  double average_power_W = 0;  // energy / iteration time
  // Drawn while the GPU ran no compute kernel (bubbles and exposed
  // communication): its idle power x (iteration time - compute time).
  double idle_energy_J = 0;
};

struct EnergyReport {
  bool measured = false;  // false: the timeline carries no energy (figures are 0)
  double energy_J = 0;    // all GPUs, one iteration
  double energy_per_token_J = 0;
  double average_power_per_gpu_W = 0;
  double cluster_power_W = 0;
  double idle_energy_J = 0;
  double idle_energy_fraction = 0;
  // idle_energy_J split by bubble cause (the cause's time x idle power,
  // summed over GPUs; the own optimizer step computes and is not idle).
  CauseSeconds idle_energy_by_cause_J{};
  std::vector<GpuEnergy> gpus;
};

EnergyReport analyze_energy(const Timeline& timeline, const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster);

}  // namespace trainsim::analysis
