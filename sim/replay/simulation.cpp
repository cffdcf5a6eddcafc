#include "sim/replay/simulation.hpp"

#include <stdexcept>

#include "analysis/gpu_power.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
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
  replay_options.fold = fold.fold ? &*fold.fold : nullptr;
  replay_options.iterations = options.iterations;
  replay_options.perturbations = driver ? &*driver : nullptr;
  replay_options.on_progress = options.observer.on_progress;
  if (options.observer.on_cost) {
    const auto cost =
        fold.fold ? estimate_replay_cost(result.graph, *zone, options.iterations, *fold.fold, scenario)
                  : estimate_replay_cost(result.graph, *zone, options.iterations);
    // Under the fold the replay records one class member's flows; the
    // expansion then allocates the whole run's.
    replay_options.expected_flows =
        cost.recorded_flows / static_cast<std::size_t>(fold.fold ? fold.fold->order : 1);
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
