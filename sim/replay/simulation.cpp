#include "sim/replay/simulation.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "analysis/gpu_power.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/platform/platform_arena.hpp"
#include "sim/replay/class_fold.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/replay_cost.hpp"
#include "sim/replay/replica_fold.hpp"
#include "sim/scenario/cost_model_choice.hpp"
#include "sim/scenario/replica_record_count.hpp"
#include "sim/scenario/trace_workload.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::sim {
namespace {
constexpr int kReserveGraphFromGpus = 32768;

// Replays `graph` under the class fold in a child process (a copy of this
// one, its engine not yet run): empty when the fold's run-time premises
// held, else why not (class_fold.hpp). The child reports nothing else.
std::string refuted_in_child(const workloads::TaskGraph& graph, ClusterZone& zone,
                             const ReplayOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0)
    return "no pipe to a child process";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return "no child process";
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string why;
    try {
      ReplayOptions quiet = options;
      quiet.on_progress = {};
      quiet.check_fold_only = true;
      replay(graph, zone, quiet);
    } catch (const FoldRefuted& e) {
      why = e.what();
    } catch (const std::exception& e) {
      why = std::string("the folded replay failed: ") + e.what();
    }
    for (std::size_t at = 0; at < why.size();) {
      const auto n = ::write(fds[1], why.data() + at, why.size() - at);
      if (n <= 0)
        break;
      at += static_cast<std::size_t>(n);
    }
    ::close(fds[1]);
    ::_exit(why.empty() ? 0 : 3);
  }
  ::close(fds[1]);
  std::string why;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    why.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && why.empty()))
    return "the folded replay's child process did not end normally";
  return why;
}

}  // namespace

workloads::TaskGraph build_task_graph(const scenario::Scenario& scenario) {
  if (scenario.workload)
    return scenario::import_trace_workload(scenario).graph;
  const auto cost = scenario::make_cost_model(scenario);
  // From 32,768 GPUs the graph is counted first on two shrunk plans (well
  // under a second) and built into vectors of exactly its size: growing by
  // doubling held the old and the new tasks at once (~15 GB at 1,048,576
  // GPUs) and left up to half of the last allocation unused.
  workloads::GraphCounts reserve;
  if (scenario.cluster.gpu_count() >= kReserveGraphFromGpus)
    reserve = scenario::counted_graph_counts(scenario).value_or(workloads::GraphCounts{});
  return workloads::build_iteration(scenario.model, scenario.plan, scenario.cluster, *cost, reserve);
}

SimulationResult simulate(const scenario::Scenario& scenario, const SimulationOptions& options) {
  if (!options.more_failure_seeds.empty() &&
      (scenario.perturbations.replay_depends_on_seed() || scenario.graph_depends_on_seed()))
    throw std::logic_error("more failure seeds on one replay, but the replay depends on the seed");
  SimulationResult result;
  result.graph = build_task_graph(scenario);

  // Declared before the engine, so destroyed after it: the platform's
  // memory goes back to the system once the engine has freed it.
  const PlatformArena platform_arena;
  auto engine = make_engine();
  // Perturbed GPUs need a pstate per speed they will run at, before the
  // platform is sealed.
  const auto& perturbations = scenario.perturbations;
  const GpuSpeedPlan speeds =
      plan_gpu_speeds(perturbations, scenario.cluster.gpu_count(), options.iterations, scenario.seed);
  // The engine owns its root netzone and frees it on destruction.
  auto* zone = new ClusterZone(scenario.cluster, speeds.pstate_factors);
  std::optional<PerturbationDriver> driver;
  if (!perturbations.empty())
    driver.emplace(perturbations, speeds, *zone);
  FoldDecision fold;
  if (options.fold == FoldMode::on ||
      (options.fold == FoldMode::automatic && scenario.cluster.gpu_count() >= kFoldByDefaultGpus))
    fold = plan_replica_fold(result.graph, scenario, *zone);
  ReplayOptions replay_options;
  replay_options.iterations = options.iterations;
  replay_options.perturbations = driver ? &*driver : nullptr;
  if (fold.fold && fold.fold->classes) {
    // The class fold's premise P1 is checked by its replay (FoldRefuted),
    // and SimGrid's engine runs once per process: a child replays folded
    // first; if a premise fails there, this process replays whole.
    replay_options.fold = &*fold.fold;
    if (auto refuted = refuted_in_child(result.graph, *zone, replay_options); !refuted.empty()) {
      fold.summary.folded = false;
      fold.summary.simulated = scenario.plan.dp;
      fold.summary.class_size = 1;
      fold.summary.stopped =
          "the perturbations section tells replicas apart, and the replicas did not fold as classes in the "
          "folded replay (" +
          refuted + "): replayed whole";
      fold.summary.folded_why.clear();
      fold.fold.reset();
    }
  }
  replay_options.fold = fold.fold ? &*fold.fold : nullptr;
  replay_options.on_progress = options.observer.on_progress;
  if (options.observer.on_cost) {
    const auto cost =
        fold.fold && !fold.fold->classes
            ? estimate_replay_cost(result.graph, *zone, options.iterations, *fold.fold, scenario)
            : estimate_replay_cost(result.graph, *zone, options.iterations);
    // Under the fold the replay records one class member's flows; the
    // expansion then allocates the whole run's.
    replay_options.expected_flows =
        cost.recorded_flows /
        static_cast<std::size_t>(fold.fold && !fold.fold->classes ? fold.fold->order : 1);
    options.observer.on_cost(cost);
  }
  auto replayed = replay(result.graph, *zone, replay_options);
  result.timeline = std::move(replayed.timeline);
  // The fold's per-task arrays serve the replay and its expansion only (the
  // timeline now holds the images' maps): freed before the analyses, which
  // hold the whole graph's arrays of their own.
  fold.fold.reset();
  // The GPU orbits of a folded run, for the energy and the summary.
  const auto classes = analysis::GpuClasses::of(result.graph, result.timeline,
                                                static_cast<std::size_t>(result.graph.gpu_count));
  // Energy of the first iteration (the one the timeline records).
  result.gpu_activity =
      analysis::gpu_activity(result.graph, result.timeline, scenario.cluster, classes, &result.nccl_waits);
  for (const auto& gpu : result.gpu_activity)
    result.timeline.gpu_energy_J.push_back(gpu.energy_J);
  for (std::size_t i = 0; i < replayed.iteration_end_s.size(); ++i)
    result.iteration_times_s.push_back(replayed.iteration_end_s[i] - replayed.iteration_start_s[i]);
  if (driver)
    result.perturbations = driver->stats();
  result.memory_curves = analysis::memory_curves(result.graph, result.timeline, classes);
  result.summary = analysis::summarize(result.graph, result.timeline, scenario.model, scenario.plan,
                                       scenario.cluster, classes, result.memory_curves);
  result.summary.fold = std::move(fold.summary);
  if (perturbations.failures.enabled) {
    const auto job_run = [&](std::uint64_t seed) {
      return simulate_job_failures(perturbations.failures, result.iteration_times_s,
                                   result.summary.tokens_per_iteration, scenario.model.parameter_count(),
                                   scenario.cluster.gpu_count(), scenario.cluster.node_count(), seed);
    };
    result.failures = job_run(scenario.seed);
    for (std::uint64_t seed : options.more_failure_seeds)
      result.more_failures.push_back(job_run(seed));
  }
  return result;
}

}  // namespace trainsim::sim
