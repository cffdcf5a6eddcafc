#pragma once
// The scenario's `perturbations` section as plain data: slow GPUs, thermal
// throttling, random stragglers, link faults and job failures. The loader
// (scenario_perturbations.cpp) resolves every selector (ranks, nodes,
// pipeline stages, link names) and checks every value, so nothing here can
// be wrong by the time SimGrid sees it. The replay applies GPU and link
// changes as SimGrid host pstates and link bandwidth / latency / state
// changes fired by SimGrid timers (sim/perturbations/driver.hpp); failures run
// as a job-level event simulation on SimGrid timers (sim/perturbations/job_failures.hpp).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace trainsim::scenario {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

// [from_s, until_s) in simulated seconds since the start of the run.
struct TimeWindow {
  double from_s = 0;
  double until_s = kForever;
  bool contains(double t) const { return t >= from_s && t < until_s; }
};

// GPUs computing at `speed` x nominal inside the window.
struct SlowGpus {
  std::vector<int> gpus;
  double speed = 1;
  TimeWindow window;
};

// A thermal throttling profile: from each point's time on, the GPUs compute
// at its speed (a step function, as a SimGrid speed profile).
struct ThrottlePoint {
  double at_s = 0;
  double speed = 1;
};
struct Throttling {
  std::vector<int> gpus;
  std::vector<ThrottlePoint> points;
};

// A random variable drawn with explicit code on std::mt19937_64 (the
// standard library's distributions differ between implementations).
struct Distribution {
  enum class Kind { fixed, uniform, lognormal };
  Kind kind = Kind::fixed;
  double a = 0;  // fixed: the value; uniform: min; lognormal: median
  double b = 0;  // uniform: max; lognormal: sigma of the underlying normal
  double min = 0;
  double max = kForever;  // draws are clamped to [min, max]
};

// Per GPU per iteration: with `probability` the GPU starts a slow episode at
// the iteration's start, computing at a drawn `speed` for a drawn duration.
struct Stragglers {
  bool enabled = false;
  double probability = 0;
  Distribution speed;
  Distribution duration_s;
  std::vector<int> gpus;  // the GPUs that may straggle (default: all)
};

// A fault on links named as the ClusterZone names them ("node3-nic0",
// "leaf1-uplink", "gpu5-nvlink"), both directions.
struct LinkFault {
  std::vector<std::string> links;
  double bandwidth_factor = 1;  // bandwidth x this while degraded
  double added_latency_s = 0;   // extra latency of every route through the link
  bool down = false;            // no traffic at all while down
  // A fat-tree leaf or pod uplink is the aggregate of `uplinks` physical
  // links (ECMP over the spines); `down` takes one of them out and the others
  // carry its traffic. 1 (or any other link): the job stalls while it is down.
  int uplinks = 1;
  TimeWindow window;
  // Flapping: inside the window, degraded (or down) for duty x period at the
  // start of every period, healthy for the rest. 0: steady.
  double period_s = 0;
  double duty = 1;
};

// Job failures, simulated over a long run from the per-iteration times.
struct Failures {
  bool enabled = false;
  double gpu_mtbf_s = 0;     // 0: no random GPU failures
  double node_mtbf_s = 0;    // 0: no random node failures
  std::vector<double> at_s;  // failures at given wall-clock times
  double restart_delay_s = 0;
  double checkpoint_interval_s = 0;  // 0: never checkpoints
  double storage_bandwidth_Bps = 0;  // aggregate write bandwidth to storage
  double run_time_s = 0;             // wall-clock length of the job
  // Bytes per parameter in a checkpoint: bf16 weights (2) plus the fp32
  // master weights and Adam moments (12).
  double checkpoint_bytes_per_parameter = 14;
};

struct Perturbations {
  std::vector<SlowGpus> slow_gpus;
  std::vector<Throttling> throttling;
  Stragglers stragglers;
  std::vector<LinkFault> links;
  Failures failures;

  bool touches_gpus() const { return !slow_gpus.empty() || !throttling.empty() || stragglers.enabled; }
  bool empty() const { return !touches_gpus() && links.empty() && !failures.enabled; }
  // Only random stragglers draw from the seed during the replay; failures
  // draw theirs in the job-level run after it.
  bool replay_depends_on_seed() const { return stragglers.enabled; }
};

}  // namespace trainsim::scenario
