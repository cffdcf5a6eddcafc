#include "analysis/execution_index.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace trainsim::analysis {

using workloads::TaskId;

ExecutionIndex::ExecutionIndex(const workloads::TaskGraph& graph, const Timeline& timeline)
    : flags_(graph.size(), 0),
      times_(graph.size()),
      order_begin_(static_cast<std::size_t>(std::max(graph.gpu_count, 0)) + 1, 0),
      stream_pred_(graph.size(), kNone32),
      releaser_(graph.size(), kNone32) {
  if (graph.size() >= kNone32)
    throw std::length_error("the execution index numbers tasks in 32 bits: the graph has more");
  double last_end = -1;
  // The records as the full list reads them, each recorded record then its
  // images (analysis/record_list.hpp), an image's GPU computed only for a
  // compute record (the only ones whose GPU is read here). The compute
  // records as (GPU, task) in that order, filed by GPU below.
  const auto& records = timeline.records;
  const FoldImages* images = records.fold_images();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> computed;
  for (const auto& first : records.recorded()) {
    const int n = records.images_of(first);
    for (int k = 0; k < n; ++k) {
      const TaskId task = k == 0 ? first.task : images->tasks.power(first.task, k);
      if (task >= graph.size())
        throw std::invalid_argument("timeline record names a task the graph does not have");
      if ((flags_[task] & kRan) == 0) {
        flags_[task] = kRan;
        times_[task] = {first.start_s, first.end_s};
        if (first.stream == Stream::compute) {
          const int gpu =
              k == 0 ? first.gpu
                     : static_cast<int>(images->endpoints.power(static_cast<std::size_t>(first.gpu), k));
          if (gpu < 0 || gpu >= graph.gpu_count)
            throw std::invalid_argument("timeline record names a GPU the graph does not have");
          computed.emplace_back(static_cast<std::uint32_t>(gpu), static_cast<std::uint32_t>(task));
          ++order_begin_[static_cast<std::size_t>(gpu) + 1];
        }
      }
      if (first.end_s >= last_end) {
        last_end = first.end_s;
        last_task_ = task;
      }
    }
  }
  // Filed by GPU, in record order within a GPU (a counting sort), then each
  // GPU's put in order of start.
  for (std::size_t g = 1; g < order_begin_.size(); ++g)
    order_begin_[g] += order_begin_[g - 1];
  compute_order_.resize(computed.size());
  {
    std::vector<std::uint32_t> next(order_begin_.begin(), order_begin_.end() - 1);
    for (const auto& [gpu, task] : computed)
      compute_order_[next[gpu]++] = task;
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>>().swap(computed);
  std::vector<std::uint32_t> next_of(graph.size(), kNone32);  // stream successor
  for (std::size_t g = 0; g + 1 < order_begin_.size(); ++g) {
    const auto order = compute_order_.begin() + order_begin_[g];
    const auto order_end = compute_order_.begin() + order_begin_[g + 1];
    const auto earlier = [&](std::uint32_t a, std::uint32_t b) {
      if (times_[a].start_s != times_[b].start_s)
        return times_[a].start_s < times_[b].start_s;
      return times_[a].end_s < times_[b].end_s;
    };
    // A compute stream's records end in the order they start: mostly in
    // order already, which a stable sort would leave as it is.
    if (!std::is_sorted(order, order_end, earlier))
      std::stable_sort(order, order_end, earlier);
    for (auto it = order + 1; it < order_end; ++it) {
      stream_pred_[*it] = *(it - 1);
      next_of[*(it - 1)] = *it;
    }
  }

  // Releasers, and a topological order over graph edges plus stream edges
  // (Kahn's algorithm; ready tasks taken by start time for a stable order).
  // A task's count of ran predecessors is whole once its own turn is done:
  // it is ready from the start when that count is 0.
  std::vector<std::uint32_t> waiting(graph.size(), 0);
  std::vector<TaskId> ready;
  for (TaskId v = 0; v < graph.size(); ++v) {
    if ((flags_[v] & kRan) == 0)
      continue;
    TaskId best = widen(stream_pred_[v]);
    int at_best = best == kNone ? 0 : 1;  // candidates ending when `best` does
    std::uint32_t preds = best == kNone ? 0 : 1;
    for (auto [e, e_end] = boost::in_edges(workloads::task_vertex(v), graph.dependencies()); e != e_end;
         ++e) {
      const TaskId u = boost::source(*e, graph.dependencies());
      if ((flags_[u] & kRan) == 0)
        continue;
      ++preds;
      if (best == kNone || times_[u].end_s > times_[best].end_s) {
        best = u;
        at_best = 1;
      } else if (times_[u].end_s == times_[best].end_s && u != best) {
        ++at_best;
        best = std::min(best, u);
      }
    }
    waiting[v] = preds;
    releaser_[v] = best == kNone ? kNone32 : static_cast<std::uint32_t>(best);
    if (at_best > 1)
      flags_[v] |= kTied;
    if (preds == 0)
      ready.push_back(v);
  }
  topo_.reserve(graph.size());
  while (!ready.empty()) {
    const TaskId v = ready.back();
    ready.pop_back();
    topo_.push_back(static_cast<std::uint32_t>(v));
    auto release = [&](TaskId w) {
      if (w != kNone && (flags_[w] & kRan) != 0 && --waiting[w] == 0)
        ready.push_back(w);
    };
    for (auto [e, e_end] = boost::out_edges(workloads::task_vertex(v), graph.dependencies()); e != e_end; ++e)
      release(boost::target(*e, graph.dependencies()));
    release(widen(next_of[v]));
  }
}

}  // namespace trainsim::analysis
