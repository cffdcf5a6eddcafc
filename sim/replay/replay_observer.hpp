#pragma once
// What a running simulation tells whoever watches it: counters and an
// estimate of its cost, never text. Models never print; the CLI renders
// these (a progress line, a warning before an expensive run).
#include <cstddef>
#include <functional>

namespace trainsim::sim {

// Where the replay is, reported every few hundred finished tasks and every
// few thousand finished flows.
struct ReplayProgress {
  double simulated_s = 0;       // the simulated clock
  std::size_t tasks_done = 0;   // over every replayed iteration
  std::size_t tasks_total = 0;  // tasks per iteration x iterations
  std::size_t flows_done = 0;   // network flows finished, over every iteration
};

// The replay's cost, estimated before it starts from what it will simulate
// (every collective's flows counted exactly by expanding it without
// SimGrid) and the measured cost per flow and task (docs/performance.md).
struct ReplayCost {
  int gpus = 0;
  std::size_t tasks = 0;       // per iteration
  std::size_t flows = 0;       // per iteration, at the cluster's fidelity
  std::size_t fast_flows = 0;  // per iteration, with collectives.fidelity fast
  // Flows the first iteration records (Timeline::flows): under `auto` every
  // detailed step, whether SimGrid ran it or it was computed alone.
  std::size_t recorded_flows = 0;
  bool detailed = true;  // the cluster's fidelity is detailed
  int iterations = 1;
  double time_s = 0;        // estimated wall time of the replay
  double fast_time_s = 0;   // the same with fidelity fast
  double memory_bytes = 0;  // estimated peak memory of the process
};

struct ReplayObserver {
  std::function<void(const ReplayCost&)> on_cost;
  std::function<void(const ReplayProgress&)> on_progress;
};

// The estimate for `flows` flows and `tasks` tasks on `gpus` GPUs, from the
// measurements of docs/performance.md: each flow costs more as the cluster
// (and so the number of activities SimGrid walks at each completion) grows.
double estimated_replay_time_s(std::size_t tasks, std::size_t flows, int gpus);
// A folded run (docs/performance.md, "The fold"): the quotient's replay
// (`replayed_tasks`, the SimGrid flows it starts, on `quotient_gpus`) and
// the per-task cost of building, checking and expanding the whole run's
// `tasks`.
double estimated_folded_replay_time_s(std::size_t replayed_tasks, std::size_t replayed_flows,
                                      int quotient_gpus, std::size_t tasks);
double estimated_replay_memory_bytes(std::size_t tasks, std::size_t recorded_flows);

}  // namespace trainsim::sim
