#pragma once
// Energy of the iteration, from the power model of analysis/gpu_power.hpp
// (power by what each GPU does: compute, memory-bound compute, NCCL only,
// idle), with the share drawn while GPUs run no compute kernel (bubbles and
// exposed communication).
#include <vector>

#include "analysis/bubbles.hpp"
#include "analysis/fold_classes.hpp"
#include "analysis/gpu_power.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "platforms/cluster_spec.hpp"

namespace trainsim::analysis {

struct GpuEnergy {
  int gpu = 0;
  double energy_J = 0;         // the power model's, integrated over the iteration
  double average_power_W = 0;  // energy / iteration time
  // Drawn while the GPU ran no compute kernel (bubbles and exposed
  // communication): communication power while only NCCL kernels ran (moving
  // data, or waiting in a receive or collective for its peers), idle power
  // otherwise.
  double idle_energy_J = 0;
  // The part of idle_energy_J drawn while only NCCL kernels ran.
  double communication_energy_J = 0;
};

struct EnergyReport {
  bool measured = false;  // false: the timeline carries no energy (figures are 0)
  double energy_J = 0;    // all GPUs, one iteration
  double energy_per_token_J = 0;
  double average_power_per_gpu_W = 0;
  double cluster_power_W = 0;
  double idle_energy_J = 0;
  double idle_energy_fraction = 0;
  double communication_energy_J = 0;
  // idle_energy_J split by bubble cause: each cause's time at communication
  // power while NCCL's kernels ran (moving data or waiting for peers), at idle
  // power while nothing ran; summed over GPUs; the own optimizer step
  // computes and is not idle.
  CauseSeconds idle_energy_by_cause_J{};
  std::vector<GpuEnergy> gpus;
};

EnergyReport analyze_energy(const workloads::TaskGraph& graph, const Timeline& timeline,
                            const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster);
// The same, on GPU orbits already built for this graph and timeline.
EnergyReport analyze_energy(const workloads::TaskGraph& graph, const Timeline& timeline,
                            const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster, const GpuClasses& classes);
// The same, with the GPUs' activity already computed for them
// (gpu_activity(graph, timeline, cluster, classes)).
EnergyReport analyze_energy(const Timeline& timeline, const Summary& summary, const BubbleReport& bubbles,
                            const platforms::ClusterSpec& cluster, const std::vector<GpuActivity>& activity);

}  // namespace trainsim::analysis
