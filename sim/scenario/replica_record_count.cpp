#include "sim/scenario/replica_record_count.hpp"

#include <algorithm>
#include <exception>
#include <set>
#include <utility>
#include <vector>

#include "sim/scenario/cost_model_choice.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/plan_checks.hpp"

namespace trainsim::scenario {
namespace {

// A shrunk graph larger than this is not built to be counted: the count would
// cost what the guard is there to prevent (~0.5 KB a task). Bounded before
// building, in GPUs and in (GPU x micro-batch x layer or chunk of a stage)
// units, of which plans build up to ~15 records each (interleaved chunks
// with TP overlap's pieces): 2e5 units stay under ~1.5 GB while the graph is
// counted; a plan beyond either (a billion-sequence batch) keeps the formula.
constexpr double kMaxCountedGpus = 4096;
constexpr double kMaxCountedUnits = 2e5;

double units_of(const workloads::ParallelPlan& plan, int layers) {
  const double per_stage = std::max(1.0, double(layers) / std::max(1, plan.pp));
  return double(plan.gpu_count()) * std::max(1, plan.micro_batches()) *
         std::max(per_stage, double(std::max(1, plan.virtual_stages)));
}

}  // namespace

double timeline_records(const workloads::TaskGraph& graph) {
  double records = 0;
  for (const auto id : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
    const auto& task = graph[id];
    records += task.kind == workloads::TaskKind::collective
                   ? static_cast<double>(graph.groups.at(static_cast<std::size_t>(task.group)).size())
                   : 1.0;
  }
  return records;
}

double exchange_flows(const workloads::TaskGraph& graph, const platforms::ClusterSpec& cluster) {
  double flows = 0;
  for (const auto id : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
    const auto& task = graph[id];
    if (task.kind != workloads::TaskKind::collective || task.comm != workloads::CommKind::ep)
      continue;
    const auto& members = graph.groups.at(static_cast<std::size_t>(task.group));
    const double n = static_cast<double>(members.size());
    if (task.algorithm != platforms::CollectiveAlgorithm::deepep) {
      flows += n * (n - 1);
      continue;
    }
    std::set<int> domains;
    for (int gpu : members)
      domains.insert(cluster.locate(gpu).domain);
    const double nodes = static_cast<double>(domains.size());
    flows += n * (nodes - 1) + n * (n / nodes - 1);
  }
  return flows;
}

namespace {

// The scenario's plan with `replicas` data-parallel replicas, on as many of
// the group's nodes as it needs; nullopt when that is no valid plan.
std::optional<Scenario> with_replicas(const Scenario& scenario, int replicas) {
  const auto& plan = scenario.plan;
  const auto& group = scenario.cluster.groups.front();
  const long gpus = long(replicas) * plan.tp * plan.pp * plan.cp;
  if (gpus % group.gpus_per_node != 0 || plan.global_batch_size % plan.dp != 0)
    return std::nullopt;
  // An HSDP plan shrunk to a single shard group would lose its all-reduce
  // across groups: keep at least two.
  if (plan.hybrid_sharded() && long(replicas) * plan.cp < 2L * plan.zero_shard_size())
    return std::nullopt;
  Scenario shrunk = scenario;
  shrunk.plan.dp = replicas;
  shrunk.plan.global_batch_size = plan.global_batch_size / plan.dp * replicas;
  shrunk.cluster.groups.front().nodes = static_cast<int>(gpus / group.gpus_per_node);
  if (!workloads::plan_problems(shrunk.model, shrunk.plan).empty())
    return std::nullopt;
  return shrunk;
}

bool affordable(const Scenario& scenario) {
  return scenario.plan.gpu_count() <= kMaxCountedGpus &&
         units_of(scenario.plan, scenario.model.layers) <= kMaxCountedUnits;
}

// The plan's task graph of one iteration, or nullopt where building it
// fails on a precondition the loader's other checks would name.
std::optional<workloads::TaskGraph> built(const Scenario& scenario) {
  try {
    const auto cost = make_cost_model(scenario);
    return workloads::build_iteration(scenario.model, scenario.plan, scenario.cluster, *cost);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<workloads::GraphCounts> graph_counts(const Scenario& scenario) {
  const auto graph = built(scenario);
  return graph ? std::optional(graph->counts()) : std::nullopt;
}

std::optional<IterationCount> count(const Scenario& scenario) {
  const auto graph = built(scenario);
  if (!graph)
    return std::nullopt;
  return IterationCount{timeline_records(*graph), exchange_flows(*graph, scenario.cluster)};
}

IterationCount scaled(const IterationCount& c, double factor) {
  return {c.records * factor, c.exchange_flows * factor};
}

// Plans the counts can be taken for: one node group, the plan on the whole
// cluster, the same micro-batches in every replica, no trace workload.
bool countable(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  return !scenario.workload && scenario.cluster.groups.size() == 1 && plan.dp_micro_batches.empty() &&
         plan.gpu_count() == scenario.cluster.gpu_count();
}

// `scenario` counted on its own graph when that is affordable, else on the
// same plan with fewer micro-batches per replica (the largest divisor of
// its count that is affordable and valid), scaled by the ratio: what a
// micro-batch records is the same in each, so only the per-iteration part
// (gradient collectives, the optimizer) is overcounted, by that ratio.
std::optional<IterationCount> count_affordable(const Scenario& scenario) {
  if (affordable(scenario))
    return count(scenario);
  const auto& plan = scenario.plan;
  const int m = plan.micro_batches();
  for (int fewer = m - 1; fewer >= 1; --fewer) {
    if (m % fewer != 0)
      continue;
    Scenario shrunk = scenario;
    shrunk.plan.global_batch_size = plan.global_batch_size / m * fewer;
    if (!affordable(shrunk) || !workloads::plan_problems(shrunk.model, shrunk.plan).empty())
      continue;
    const auto counted = count(shrunk);
    if (!counted)
      return std::nullopt;
    return scaled(*counted, double(m) / fewer);
  }
  return std::nullopt;
}

}  // namespace

std::optional<IterationCount> counted_iteration(const Scenario& scenario, int whole_up_to_gpus) {
  const auto& plan = scenario.plan;
  if (!countable(scenario))
    return std::nullopt;
  if (plan.gpu_count() <= whole_up_to_gpus || plan.dp == 1)
    return count_affordable(scenario);
  // From two replicas: one would have no data-parallel collectives.
  for (int d = 2; d < plan.dp; ++d) {
    if (plan.dp % d != 0)
      continue;
    const auto shrunk = with_replicas(scenario, d);
    if (!shrunk)
      continue;
    if (plan.gpu_count() / plan.dp * d > kMaxCountedGpus)
      return std::nullopt;  // larger still with more replicas
    if (const auto counted = count_affordable(*shrunk))
      return scaled(*counted, double(plan.dp) / d);
  }
  return std::nullopt;
}

std::optional<double> counted_iteration_records(const Scenario& scenario, int whole_up_to_gpus) {
  const auto counted = counted_iteration(scenario, whole_up_to_gpus);
  if (!counted)
    return std::nullopt;
  return counted->records;
}

std::optional<workloads::GraphCounts> counted_graph_counts(const Scenario& scenario) {
  const auto& plan = scenario.plan;
  if (!countable(scenario))
    return std::nullopt;
  std::vector<std::pair<int, workloads::GraphCounts>> points;
  for (int d = 2; d < plan.dp && points.size() < 2; ++d) {
    if (plan.dp % d != 0)
      continue;
    const auto shrunk = with_replicas(scenario, d);
    if (!shrunk)
      continue;
    if (!affordable(*shrunk))
      return std::nullopt;
    const auto counts = graph_counts(*shrunk);
    if (!counts)
      return std::nullopt;
    points.emplace_back(d, *counts);
  }
  if (points.size() < 2)
    return std::nullopt;
  const auto [d1, c1] = points[0];
  const auto [d2, c2] = points[1];
  // a + b x replicas through both points, in integers: nullopt unless b is
  // whole and no count falls with the replicas.
  const auto line = [&](std::size_t y1, std::size_t y2) -> std::optional<std::size_t> {
    const auto span = static_cast<std::size_t>(d2 - d1);
    if (y2 < y1 || (y2 - y1) % span != 0)
      return std::nullopt;
    return y1 + (y2 - y1) / span * static_cast<std::size_t>(plan.dp - d1);
  };
  const auto tasks = line(c1.tasks, c2.tasks);
  const auto dependencies = line(c1.dependencies, c2.dependencies);
  const auto events = line(c1.memory_events, c2.memory_events);
  if (!tasks || !dependencies || !events)
    return std::nullopt;
  return workloads::GraphCounts{*tasks, *dependencies, *events};
}

}  // namespace trainsim::scenario
