#include "analysis/execution_index.hpp"

#include <algorithm>
#include <stdexcept>

namespace trainsim::analysis {

using workloads::TaskId;

ExecutionIndex::ExecutionIndex(const workloads::TaskGraph& graph, const Timeline& timeline)
    : ran_(graph.size(), false),
      tied_(graph.size(), false),
      start_s_(graph.size(), 0.0),
      end_s_(graph.size(), 0.0),
      compute_order_(static_cast<std::size_t>(std::max(graph.gpu_count, 0))),
      stream_pred_(graph.size(), kNone32),
      releaser_(graph.size(), kNone32) {
  if (graph.size() >= kNone32)
    throw std::length_error("the execution index numbers tasks in 32 bits: the graph has more");
  double last_end = -1;
  // The records as the full list reads them, each recorded record then its
  // images (analysis/record_list.hpp), an image's GPU computed only for a
  // compute record (the only ones whose GPU is read here).
  const auto& records = timeline.records;
  const FoldImages* images = records.fold_images();
  for (const auto& first : records.recorded()) {
    const int n = records.images_of(first);
    for (int k = 0; k < n; ++k) {
      const TaskId task = k == 0 ? first.task : images->tasks.power(first.task, k);
      if (task >= graph.size())
        throw std::invalid_argument("timeline record names a task the graph does not have");
      if (!ran_[task]) {
        ran_[task] = true;
        start_s_[task] = first.start_s;
        end_s_[task] = first.end_s;
        if (first.stream == Stream::compute) {
          const int gpu = k == 0 ? first.gpu : records.image(first, k).gpu;
          if (gpu < 0 || gpu >= graph.gpu_count)
            throw std::invalid_argument("timeline record names a GPU the graph does not have");
          compute_order_[static_cast<std::size_t>(gpu)].push_back(static_cast<std::uint32_t>(task));
        }
      }
      if (first.end_s >= last_end) {
        last_end = first.end_s;
        last_task_ = task;
      }
    }
  }
  for (auto& order : compute_order_) {
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (start_s_[a] != start_s_[b])
        return start_s_[a] < start_s_[b];
      return end_s_[a] < end_s_[b];
    });
    for (std::size_t i = 1; i < order.size(); ++i)
      stream_pred_[order[i]] = order[i - 1];
  }

  // Releasers, and a topological order over graph edges plus stream edges
  // (Kahn's algorithm; ready tasks taken by start time for a stable order).
  std::vector<int> waiting(graph.size(), 0);
  for (TaskId v = 0; v < graph.size(); ++v) {
    if (!ran_[v])
      continue;
    TaskId best = widen(stream_pred_[v]);
    int at_best = best == kNone ? 0 : 1;  // candidates ending when `best` does
    for (auto [e, e_end] = boost::in_edges(workloads::task_vertex(v), graph.dependencies()); e != e_end;
         ++e) {
      const TaskId u = boost::source(*e, graph.dependencies());
      if (!ran_[u])
        continue;
      ++waiting[v];
      if (best == kNone || end_s_[u] > end_s_[best]) {
        best = u;
        at_best = 1;
      } else if (end_s_[u] == end_s_[best] && u != best) {
        ++at_best;
        best = std::min(best, u);
      }
    }
    if (stream_pred_[v] != kNone32)
      ++waiting[v];
    releaser_[v] = best == kNone ? kNone32 : static_cast<std::uint32_t>(best);
    tied_[v] = at_best > 1;
  }
  std::vector<TaskId> ready;
  for (TaskId v = 0; v < graph.size(); ++v)
    if (ran_[v] && waiting[v] == 0)
      ready.push_back(v);
  topo_.reserve(graph.size());
  std::vector<std::uint32_t> next_of(graph.size(), kNone32);  // stream successor
  for (const auto& order : compute_order_)
    for (std::size_t i = 1; i < order.size(); ++i)
      next_of[order[i - 1]] = order[i];
  while (!ready.empty()) {
    const TaskId v = ready.back();
    ready.pop_back();
    topo_.push_back(static_cast<std::uint32_t>(v));
    auto release = [&](TaskId w) {
      if (w != kNone && ran_[w] && --waiting[w] == 0)
        ready.push_back(w);
    };
    for (auto [e, e_end] = boost::out_edges(workloads::task_vertex(v), graph.dependencies()); e != e_end; ++e)
      release(boost::target(*e, graph.dependencies()));
    release(widen(next_of[v]));
  }
}

}  // namespace trainsim::analysis
