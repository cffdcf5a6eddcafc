#include "sim/replay/collective_benchmark.hpp"

#include <algorithm>
#include <numeric>

#include "sim/collectives/collectives.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/platform/platform_arena.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/replay_cost.hpp"

namespace trainsim::sim {

double bus_factor(workloads::CollectiveOp op, int ranks) {
  using workloads::CollectiveOp;
  const double n = ranks;
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
    case CollectiveOp::all_to_all:
      return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::send_recv:
      return 1;
  }
  return 1;
}

std::vector<double> size_range(double min_bytes, double max_bytes, double factor) {
  std::vector<double> sizes;
  // A relative tolerance keeps max itself when it is min * factor^k.
  for (double s = min_bytes; s <= max_bytes * (1 + 1e-9); s *= factor) {
    sizes.push_back(s);
    if (factor <= 1)
      break;
  }
  return sizes;
}

CollectiveBenchmark run_collective_benchmark(const platforms::ClusterSpec& cluster,
                                             const CollectiveBenchmarkOptions& options) {
  workloads::TaskGraph graph;
  graph.gpu_count = cluster.gpu_count();
  std::vector<int> ranks(static_cast<std::size_t>(options.ranks));
  std::iota(ranks.begin(), ranks.end(), 0);
  const int group = graph.add_group(ranks);
  std::vector<workloads::TaskId> tasks;
  for (double bytes : options.sizes_bytes) {
    const auto id = graph.add({.kind = workloads::TaskKind::collective,
                               .comm = workloads::CommKind::dp,
                               .op = options.op,
                               .algorithm = options.algorithm,
                               .group = group,
                               .bytes = bytes});
    if (!tasks.empty())
      graph.depend(tasks.back(), id);
    tasks.push_back(id);
  }
  graph.seal();

  // Destroyed after the engine: the platform's memory goes back to the
  // system (platform_arena.hpp).
  const PlatformArena platform_arena;
  auto engine = make_engine();
  // The engine owns its root netzone and frees it on destruction.
  auto* zone = new ClusterZone(cluster);
  CollectiveBenchmark result;
  result.algorithm_unavailable = algorithm_unavailable_reason(
      {options.op, ranks, options.sizes_bytes.front(), 1, options.algorithm}, *zone);
  if (options.observer.on_cost)
    options.observer.on_cost(estimate_replay_cost(graph, *zone, 1));
  ReplayOptions replay_options;
  replay_options.on_progress = options.observer.on_progress;
  const auto timeline = replay(graph, *zone, replay_options).timeline;

  auto& rows = result.rows;
  rows.resize(tasks.size());
  for (const auto& record : timeline.records) {
    if (record.gpu != 0)
      continue;
    const auto k =
        static_cast<std::size_t>(std::find(tasks.begin(), tasks.end(), record.task) - tasks.begin());
    auto& row = rows[k];
    row.bytes = options.sizes_bytes[k];
    row.time_s = record.end_s - record.start_s;
    row.algbw_Bps = row.time_s > 0 ? row.bytes / row.time_s : 0;
    row.busbw_Bps = row.algbw_Bps * bus_factor(options.op, options.ranks);
    if (const auto* choice = timeline.collective_choice(record.task)) {
      row.algorithm = choice->algorithm;
      row.channels = choice->channels;
    }
    row.protocol = ring_protocol({options.op, ranks, row.bytes, 1, options.algorithm}, *zone);
  }
  return result;
}

}  // namespace trainsim::sim
