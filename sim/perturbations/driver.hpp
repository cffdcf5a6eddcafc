#pragma once
// Applies the scenario's perturbations to the SimGrid platform while the task
// graph replays, so their effect propagates through the events:
//
//   slow GPUs, throttling, stragglers  -> the GPU host switches pstate (each
//       perturbed GPU's host is built with one pstate per speed it will
//       need: SimGrid cannot change a sealed host's speeds), and running
//       kernels slow down from that instant (SimGrid's CPU model)
//   degraded link / added latency      -> Link::set_bandwidth / set_latency on
//       both directions (ClusterZone adds link latencies to routes)
//   link down                          -> Link::turn_off: flows in flight
//       fail and, like new flows on that route, wait until it is back
//       (the job stalls); a fat-tree uplink standing for several physical
//       links loses one of them instead (ECMP reroutes over the others)
//
// Every change is fired by a SimGrid timer at its simulated time; flapping
// schedules its next edge only when one fires, and stop() removes what is
// left so the engine ends with the replay.
//
// Stragglers are drawn before the run (plan_gpu_speeds), per iteration and
// GPU in a fixed order from std::mt19937_64 with explicit distribution code,
// so a seed gives the same episodes on every platform; an episode starts at
// its iteration's start, when the replay reaches it.
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Link.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/repeated_runs.hpp"
#include "platforms/uniform_draw.hpp"
#include "sim/scenario/perturbations.hpp"

namespace trainsim::sim {

class ClusterZone;

// Portable draws (the standard distributions differ between libraries).
using platforms::uniform01;
double draw(const scenario::Distribution& d, std::mt19937_64& rng);

struct StragglerDraw {
  int iteration = 0;
  int gpu = 0;
  double speed = 1;
  double duration_s = 0;
};

// What the platform must offer before it is built: each GPU's extra pstates
// (fractions of peak) and the straggler episodes of every iteration.
struct GpuSpeedPlan {
  // Per GPU, the speed steps of slow windows and throttling: (time, speed).
  std::vector<std::vector<std::pair<double, double>>> steps;
  std::vector<std::vector<double>> pstate_factors;
  std::vector<StragglerDraw> draws;  // by iteration, then GPU
};
GpuSpeedPlan plan_gpu_speeds(const scenario::Perturbations& perturbations, int gpu_count, int iterations,
                             std::uint64_t seed);

// What the perturbations did during the replay (summary.json "perturbations";
// the typed record is analysis/repeated_runs.hpp).
using PerturbationStats = analysis::PerturbationStats;

class PerturbationDriver {
 public:
  PerturbationDriver(const scenario::Perturbations& perturbations, const GpuSpeedPlan& plan,
                     const ClusterZone& zone);
  PerturbationDriver(const PerturbationDriver&) = delete;
  PerturbationDriver& operator=(const PerturbationDriver&) = delete;

  // Applies what holds at time 0 and schedules every later change.
  void start();
  // Called by the replay when iteration `iteration` starts (now).
  void begin_iteration(int iteration);
  // Removes every pending timer.
  void stop();

  // Whether every link on the route src -> dst is up.
  bool route_up(int src, int dst) const;
  // Runs `retry` once a link that is down comes back up.
  void when_link_up(std::function<void()> retry);
  // Flows waiting for a link that is down.
  std::size_t waiting_flows() const { return waiting_.size(); }
  // Bookkeeping of a flow that waited `waited_s` for a link.
  void note_stall(double waited_s);

  const PerturbationStats& stats() const { return stats_; }
  // Whether any link changes bandwidth, latency or state during the run.
  bool changes_links() const { return !links_.empty(); }

 private:
  struct LinkState {
    simgrid::s4u::SplitDuplexLink* link = nullptr;
    double nominal_Bps = 0;
    std::vector<int> active;  // fault indices active now
    bool down = false;
  };

  void at(double date_s, std::function<void()> action);
  void apply_gpu(int gpu);
  void schedule_gpu_steps(int gpu);
  void schedule_fault(int fault);
  void set_fault(int fault, bool active);
  void apply_link(LinkState& state);

  const scenario::Perturbations& p_;
  const GpuSpeedPlan& plan_;
  const ClusterZone& zone_;
  std::vector<double> step_speed_;      // current slow-window x throttle speed per GPU
  std::vector<double> straggle_speed_;  // current straggler speed per GPU
  std::vector<double> straggle_until_s_;
  std::vector<double> straggle_from_s_;
  std::size_t draw_cursor_ = 0;
  std::map<std::string, LinkState> links_;
  std::vector<std::function<void()>> waiting_;
  std::map<std::uint64_t, simgrid::kernel::timer::Timer*> timers_;
  std::uint64_t next_timer_ = 0;
  PerturbationStats stats_;
  bool stopped_ = false;
};

}  // namespace trainsim::sim
