#include "analysis/critical_path.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "analysis/execution_index.hpp"

namespace trainsim::analysis {

using workloads::Task;
using workloads::TaskId;
using workloads::TaskKind;

std::string blame_kind(const Task& task) {
  switch (task.kind) {
    case TaskKind::optimizer:
      return fmt::format("stage {} optimizer", task.stage);
    case TaskKind::send:
      return fmt::format("{} p2p", workloads::to_string(task.comm));
    case TaskKind::collective:
      return fmt::format("{} {}", workloads::to_string(task.comm), workloads::to_string(task.op));
    default:
      return fmt::format("stage {} compute", task.stage);
  }
}

LinkLoadIndex::LinkLoadIndex(const Timeline& timeline) : LinkLoadIndex(timeline, LinkClasses::of(timeline)) {}

LinkLoadIndex::LinkLoadIndex(const Timeline& timeline, LinkClasses links)
    : timeline_(timeline),
      links_(std::move(links)),
      longest_flow_s_(timeline.links.size(), 0.0),
      ready_(timeline.links.size(), 0),
      flows_by_task_(links_.folded() ? FlowIndex::by_recorded_task(timeline) : FlowIndex::by_task(timeline)) {
}

namespace {

// The tasks whose flows LinkLoadIndex::flows_of reads for `asked`, sorted:
// a folded task's are its orbit's (the recorded one among them holds the
// flows).
std::vector<TaskId> keys_read_for(const Timeline& timeline, bool folded, const std::vector<TaskId>& asked) {
  const FoldImages* images = folded ? timeline.flows.fold_images() : nullptr;
  std::vector<TaskId> keys;
  for (const TaskId task : asked) {
    if (images == nullptr || images->tasks.fixed(task)) {
      keys.push_back(task);
      continue;
    }
    for (int j = 0; j < images->order; ++j)
      keys.push_back(images->tasks.power(task, j));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace

LinkLoadIndex::LinkLoadIndex(const Timeline& timeline, LinkClasses links, const std::vector<TaskId>& asked)
    : timeline_(timeline),
      links_(std::move(links)),
      longest_flow_s_(timeline.links.size(), 0.0),
      ready_(timeline.links.size(), 0),
      asked_(keys_read_for(timeline, links_.folded(), asked)),
      flows_by_task_(FlowIndex::of_tasks(timeline, links_.folded(), asked_)),
      among_asked_(true) {}

std::span<const std::uint32_t> LinkLoadIndex::flows_of_key(TaskId task) const {
  if (among_asked_) {
    const auto it = std::lower_bound(asked_.begin(), asked_.end(), task);
    if (it != asked_.end() && *it == task)
      return std::as_const(flows_by_task_).of(static_cast<std::size_t>(it - asked_.begin()));
    // Not asked for: every task's flows from now on.
    flows_by_task_ = links_.folded() ? FlowIndex::by_recorded_task(timeline_) : FlowIndex::by_task(timeline_);
    among_asked_ = false;
  }
  return std::as_const(flows_by_task_).of(task);
}

void LinkLoadIndex::make_ready(std::size_t rep) const {
  if (ready_[rep])
    return;
  ready_[rep] = 1;
  // The link's flows in order of start, ties in list order.
  std::vector<std::pair<double, std::uint32_t>> keyed;
  links_.order_by_start(rep, keyed, [&](const FlowRecord& flow) {
    longest_flow_s_[rep] = std::max(longest_flow_s_[rep], flow.end_s - flow.start_s);
  });
}

std::vector<std::size_t> LinkLoadIndex::flows_of(TaskId task) const {
  if (!links_.folded()) {
    const auto flows = flows_of_key(task);
    return {flows.begin(), flows.end()};
  }
  // Flow i*m + k of the full list is recorded flow i's image k; the task's
  // flows are the images, mapping onto it, of its orbit's recorded flows (a
  // spanning collective is its own image: all m images of its flows).
  const FoldImages& images = *timeline_.flows.fold_images();
  const auto m = static_cast<std::size_t>(images.order);
  std::vector<std::size_t> out;
  if (images.tasks.fixed(task)) {
    for (const std::uint32_t i : flows_of_key(task))
      for (std::size_t k = 0; k < m; ++k)
        out.push_back(i * m + k);
    return out;
  }
  for (std::size_t j = 0; j < m; ++j) {
    const auto source = images.tasks.power(task, static_cast<int>(j));  // task is its image m - j
    for (const std::uint32_t i : flows_of_key(source))
      out.push_back(i * m + (m - j) % m);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int LinkLoadIndex::busiest_link(TaskId task, double start_s, double end_s) const {
  std::vector<std::uint32_t> links;
  for (std::size_t f : flows_of(task)) {
    const auto& flow = timeline_.flows[f];
    links.insert(links.end(), timeline_.flow_links.begin() + flow.first_link,
                 timeline_.flow_links.begin() + flow.first_link + flow.link_count);
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  int best = -1;
  double best_load = -1;
  for (std::uint32_t l : links) {
    // Bytes every flow on the link moved inside [start_s, end_s), assuming
    // each flow moves its bytes at a constant rate over its lifetime.
    double bytes = 0;
    const std::size_t rep = links_.representative(l);
    make_ready(rep);
    const auto list = std::as_const(links_).flows_of(rep);
    // Flows that started before start_s - longest cannot reach the window.
    const double from = start_s - longest_flow_s_[rep];
    auto first = std::lower_bound(list.begin(), list.end(), from,
                                  [&](std::uint32_t f, double t) { return links_.record(f).start_s < t; });
    for (auto it = first; it != list.end(); ++it) {
      const auto& flow = links_.record(*it);  // bytes and times
      if (flow.start_s >= end_s)
        break;
      const double overlap = std::min(end_s, flow.end_s) - std::max(start_s, flow.start_s);
      const double life = flow.end_s - flow.start_s;
      if (life <= 0)
        bytes += (flow.start_s >= start_s && flow.start_s <= end_s) ? flow.bytes : 0;
      else if (overlap > 0)
        bytes += flow.bytes * overlap / life;
    }
    const double bw = timeline_.links[l].bandwidth_Bps;
    const double load = bw > 0 ? bytes / bw : 0;
    if (load > best_load) {
      best_load = load;
      best = static_cast<int>(l);
    }
  }
  return best;
}

namespace {

std::vector<Blame> ranked(const std::map<std::string, double>& seconds, double total_s) {
  std::vector<Blame> out;
  for (const auto& [name, s] : seconds)
    out.push_back({name, s, total_s > 0 ? s / total_s : 0});
  std::stable_sort(out.begin(), out.end(),
                   [](const Blame& a, const Blame& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace

CriticalPath critical_path(const workloads::TaskGraph& graph, const Timeline& timeline) {
  return critical_path(graph, timeline, ExecutionIndex(graph, timeline));
}

CriticalPath critical_path(const workloads::TaskGraph& graph, const Timeline& timeline,
                           const ExecutionIndex& index) {
  return critical_path(graph, timeline, index, LinkClasses::of(timeline));
}

CriticalPath critical_path(const workloads::TaskGraph& graph, const Timeline& timeline,
                           const ExecutionIndex& index, LinkClasses link_classes) {
  CriticalPath path;
  path.length_s = timeline.end_s;

  double hi = timeline.end_s;
  TaskId p = index.last_task();
  std::vector<CriticalSegment> backwards;
  // The communication segments (their places in `backwards`) get their
  // busiest link once the walk is done: the link-load index then files
  // only their tasks' flows.
  std::vector<std::size_t> blamed_on_link;
  std::vector<TaskId> asked;
  while (p != ExecutionIndex::kNone) {
    const double end = std::min(index.end_s(p), hi);
    if (end < hi)
      backwards.push_back({.is_task = false, .start_s = end, .end_s = hi, .blame_kind = "wait"});
    const Task& task = graph[p];
    CriticalSegment seg{
        .task = p, .start_s = std::min(index.start_s(p), end), .end_s = end, .blame_kind = blame_kind(task)};
    if (workloads::is_compute(task.kind)) {
      seg.gpu = task.gpu;
    } else {
      asked.push_back(p);
    }
    const std::size_t first_of_task = backwards.size();
    const double start = seg.start_s;
    if (task.imbalance_s > 0 && task.duration_s > 0) {
      // The part of a MoE piece its experts' extra load adds (at the pace
      // the piece actually ran) is blamed on the imbalance, the rest on the
      // stage's compute.
      const double extra = std::min(end - seg.start_s,
                                    task.imbalance_s * (index.end_s(p) - index.start_s(p)) / task.duration_s);
      CriticalSegment imbalance = seg;
      imbalance.start_s = end - extra;
      imbalance.blame_kind = "expert imbalance";
      backwards.push_back(imbalance);
      seg.end_s = imbalance.start_s;
    }
    backwards.push_back(seg);
    if (!workloads::is_compute(task.kind))  // the imbalance's part too, as a copy of it
      for (std::size_t i = first_of_task; i < backwards.size(); ++i)
        blamed_on_link.push_back(i);
    hi = start;
    p = index.releaser(p);
  }
  if (hi > 0)
    backwards.push_back({.is_task = false, .start_s = 0, .end_s = hi, .blame_kind = "wait"});
  const LinkLoadIndex links(timeline, std::move(link_classes), asked);
  for (const std::size_t i : blamed_on_link) {
    const TaskId task = backwards[i].task;
    backwards[i].link = links.busiest_link(task, index.start_s(task), index.end_s(task));
  }
  path.segments.assign(backwards.rbegin(), backwards.rend());

  std::map<std::string, double> by_kind, by_gpu, by_link;
  for (const auto& seg : path.segments) {
    const double d = seg.end_s - seg.start_s;
    by_kind[seg.blame_kind] += d;
    if (seg.gpu >= 0)
      by_gpu[fmt::format("gpu {}", seg.gpu)] += d;
    if (seg.is_task && seg.gpu < 0 && seg.link >= 0)
      by_link[timeline.links[static_cast<std::size_t>(seg.link)].name] += d;
  }
  path.by_kind = ranked(by_kind, path.length_s);
  path.by_gpu = ranked(by_gpu, path.length_s);
  path.by_link = ranked(by_link, path.length_s);
  return path;
}

}  // namespace trainsim::analysis
