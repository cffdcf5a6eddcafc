#include "analysis/collective_usage.hpp"

#include <map>
#include <tuple>
#include <vector>

namespace trainsim::analysis {

std::vector<CollectiveUse> collective_usage(const workloads::TaskGraph& graph, const Timeline& timeline) {
  using Key = std::tuple<int, int, int>;
  std::map<Key, CollectiveUse> rows;
  std::vector<char> seen(graph.size(), 0);
  // Only collective tasks have a choice (Timeline::collectives): the others
  // are passed over before the lookup, and a collective's members after its
  // first record. Read class by class, each image in the list's order (the
  // sums below add in that order).
  const auto usage_of = [&](const TaskRecord& r) {
    if (seen[r.task] || graph[r.task].kind != workloads::TaskKind::collective)
      return;  // one record per member GPU: count the task once
    const auto* choice = timeline.collective_choice(r.task);
    if (choice == nullptr)
      return;
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
  };
  // A record of a task that is not a collective has images that are not
  // either (a fold maps a task onto one of its kind), and a collective
  // already seen had its images read with it (they are its cycle under the
  // fold's rotation, read in a row): neither record's images are read.
  for (const auto& first : timeline.records.recorded()) {
    if (seen[first.task] || graph[first.task].kind != workloads::TaskKind::collective)
      continue;
    const int n = timeline.records.images_of(first);
    for (int k = 0; k < n; ++k)
      usage_of(timeline.records.image(first, k));
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
