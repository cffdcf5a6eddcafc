#include "analysis/collective_usage.hpp"

#include <map>
#include <tuple>
#include <vector>

namespace trainsim::analysis {

std::vector<CollectiveUse> collective_usage(const workloads::TaskGraph& graph, const Timeline& timeline) {
  using Key = std::tuple<int, int, int>;
  std::map<Key, CollectiveUse> rows;
  std::vector<char> seen(graph.size(), 0);
  for (const auto& r : timeline.records) {
    const auto* choice = timeline.collective_choice(r.task);
    if (choice == nullptr || seen[r.task])
      continue;  // one record per member GPU: count the task once
    seen[r.task] = 1;
    const auto& task = graph[r.task];
    const Key key{static_cast<int>(task.comm), static_cast<int>(task.op),
                  static_cast<int>(choice->algorithm)};
    auto& row = rows[key];
    row.comm = task.comm;
    row.op = task.op;
    row.algorithm = choice->algorithm;
    row.fidelity = choice->fidelity;
    row.channels = std::max(row.channels, choice->channels);
    row.count += task.fold;
    row.by_representation[static_cast<std::size_t>(choice->representation)] += task.fold;
    row.bytes += task.bytes * task.fold;
    row.busy_s += r.end_s - r.start_s;
  }
  std::vector<CollectiveUse> out;
  for (auto& [key, row] : rows)
    out.push_back(row);
  return out;
}

RepresentationTotals representation_totals(const std::vector<CollectiveUse>& uses) {
  RepresentationTotals totals;
  for (const auto& use : uses) {
    totals.automatic = totals.automatic || use.fidelity == platforms::Fidelity::automatic;
    for (std::size_t k = 0; k < totals.count.size(); ++k)
      totals.count[k] += use.by_representation[k];
  }
  return totals;
}

}  // namespace trainsim::analysis
