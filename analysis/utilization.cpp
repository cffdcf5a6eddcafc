#include "analysis/utilization.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "analysis/content_hash.hpp"
#include "analysis/flow_index.hpp"
#include "analysis/fold_classes.hpp"
#include "analysis/intervals.hpp"
#include "platforms/nearly_sorted.hpp"

namespace trainsim::analysis {

std::string comm_op_label(const workloads::Task& task) {
  if (task.kind == workloads::TaskKind::collective)
    return std::string(workloads::to_string(task.comm)) + "_" + std::string(workloads::to_string(task.op));
  if (task.kind == workloads::TaskKind::send) {
    // A transfer whose content the builder did not tag is a plain send.
    const std::string_view what =
        task.transfer == workloads::TransferKind::none ? "send" : workloads::to_string(task.transfer);
    return std::string(workloads::to_string(task.comm)) + "_" + std::string(what);
  }
  return {};
}

std::size_t comm_kind_index(workloads::CommKind kind) {
  for (std::size_t i = 0; i < kCommKinds.size(); ++i)
    if (kCommKinds[i] == kind)
      return i;
  return kCommKinds.size();
}

namespace {

// Splits the time with no compute among the communication categories
// active at each moment (sweep over every boundary): each list is one
// category's merged busy intervals.
template <typename Lists>
std::vector<double> exposed_split(const std::vector<Interval>& compute, const Lists& by_category) {
  std::vector<double> cuts;
  for (const auto& list : by_category)
    for (const auto& [a, b] : list) {
      cuts.push_back(a);
      cuts.push_back(b);
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const std::size_t n = std::size(by_category);
  std::vector<double> out(n, 0.0);
  std::vector<std::size_t> pos(n, 0);
  std::vector<char> active(n, 0);
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    const double lo = cuts[i], hi = cuts[i + 1];
    const double mid = 0.5 * (lo + hi);
    int count = 0;
    std::size_t k = 0;
    for (const auto& list : by_category) {
      while (pos[k] < list.size() && list[pos[k]].second <= lo)
        ++pos[k];
      active[k] = pos[k] < list.size() && list[pos[k]].first <= mid;
      count += active[k];
      ++k;
    }
    if (count == 0)
      continue;
    const double exposed = (hi - lo) - covered_length(compute, lo, hi);
    for (k = 0; k < n; ++k)
      if (active[k])
        out[k] += exposed / count;
  }
  return out;
}

}  // namespace

Utilization analyze_utilization(const workloads::TaskGraph& graph, const Timeline& timeline) {
  return analyze_utilization(graph, timeline,
                             GpuClasses::of(graph, timeline, static_cast<std::size_t>(graph.gpu_count)),
                             LinkClasses::of(timeline));
}

Utilization analyze_utilization(const workloads::TaskGraph& graph, const Timeline& timeline,
                                const GpuClasses& classes, const LinkClasses& link_classes,
                                SharedIntervalLists* comm_busy) {
  if (classes.size() != static_cast<std::size_t>(graph.gpu_count)) {
    if (comm_busy != nullptr)
      *comm_busy = {};
    return analyze_utilization(graph, timeline);
  }
  Utilization u;
  const double t = timeline.end_s;
  u.iteration_time_s = t;
  u.flow_count = timeline.flows.size();
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  std::vector<std::vector<Interval>> compute(gpus);
  std::vector<std::array<std::vector<Interval>, kCommKinds.size()>> comm(gpus);
  // Per GPU, per communication label (index into `labels`).
  std::map<std::string, std::size_t> label_index;
  std::vector<std::string> labels;
  // A task's label depends only on its kind, parallelism, operation and
  // transfer: each such key is labelled once (a 16k-GPU run has millions of
  // communication records and a handful of labels).
  constexpr std::size_t kNoLabel = static_cast<std::size_t>(-1);  // a compute task's
  std::map<std::uint32_t, std::size_t> key_label;
  const auto label_of = [&](const workloads::Task& task) -> std::size_t {
    const std::uint32_t key =
        static_cast<std::uint32_t>(task.kind) | static_cast<std::uint32_t>(task.comm) << 8 |
        static_cast<std::uint32_t>(task.op) << 16 | static_cast<std::uint32_t>(task.transfer) << 24;
    if (const auto it = key_label.find(key); it != key_label.end())
      return it->second;
    const std::string label = comm_op_label(task);
    std::size_t index = kNoLabel;
    if (!label.empty()) {
      auto [it, inserted] = label_index.try_emplace(label, labels.size());
      if (inserted)
        labels.push_back(label);
      index = it->second;
    }
    key_label.emplace(key, index);
    return index;
  };
  std::vector<std::vector<std::vector<Interval>>> by_op(gpus);
  const auto add_op = [&](std::size_t gpu, std::size_t label, double a, double b) {
    auto& lists = by_op[gpu];
    if (lists.size() <= label)
      lists.resize(label + 1);
    lists[label].emplace_back(a, b);
  };
  bool outside_kinds = false;
  // Per GPU orbit (analysis/fold_classes.hpp): the representatives' records.
  const auto on_rep = [&](int gpu) { return classes.is_representative(static_cast<std::size_t>(gpu)); };
  classes.for_each_record([&](const TaskRecord& r) {
    const auto& task = graph[r.task];
    if (r.stream == Stream::compute) {
      if (on_rep(r.gpu))
        compute[static_cast<std::size_t>(r.gpu)].emplace_back(r.start_s, r.end_s);
      return;
    }
    const bool to_peer = task.kind == workloads::TaskKind::send && task.peer >= 0 && on_rep(task.peer);
    if (const std::size_t label = label_of(task); label != kNoLabel) {
      if (on_rep(r.gpu))
        add_op(static_cast<std::size_t>(r.gpu), label, r.start_s, r.end_s);
      if (to_peer)
        add_op(static_cast<std::size_t>(task.peer), label, r.start_s, r.end_s);
    }
    const std::size_t k = comm_kind_index(task.comm);
    if (k >= kCommKinds.size()) {
      // A communication record the kinds' lists leave out: their union is
      // not every communication record's (comm_busy).
      outside_kinds = outside_kinds || on_rep(r.gpu) || to_peer;
      return;
    }
    if (on_rep(r.gpu))
      comm[static_cast<std::size_t>(r.gpu)][k].emplace_back(r.start_s, r.end_s);
    if (to_peer)
      comm[static_cast<std::size_t>(task.peer)][k].emplace_back(r.start_s, r.end_s);
  });
  // Each representative's communication busy intervals: the merge of its
  // kinds' merged lists (`any` below), which is the merge of every
  // communication record landing on it when each has one of the kinds (a
  // merge gives the union's maximal intervals, whatever the lists' order or
  // grouping).
  if (comm_busy != nullptr) {
    *comm_busy = {};
    if (!outside_kinds)
      comm_busy->list_of.assign(gpus, 0);
  }
  const bool keep_comm_busy = comm_busy != nullptr && !outside_kinds;
  u.gpus.resize(gpus);
  // The sums by label, GPU by GPU in rank order as into exposed_by_op_s
  // (the same additions, without a lookup of the label's name in the map
  // per GPU and label), filed there at the end.
  std::vector<double> exposed_by_label_s(labels.size(), 0.0);
  // Each representative's exposed time by label, for its images.
  std::vector<std::vector<double>> op_split_of(gpus);
  // A representative whose merged intervals (compute, each kind's, each
  // label's) have the same bits as an earlier one's gets that one's figures,
  // which are computed from them alone (analysis/content_hash.hpp): on the
  // folded scale-16k run the 4,096 representatives show 16 distinct sets of
  // intervals, one per pipeline stage.
  // `twin_of`: the first representative with each hash, whose lists are kept
  // (up to kKeptTwins of them: a run whose GPUs all differ holds no more
  // lists than a few hundred GPUs' at once).
  constexpr std::size_t kKeptTwins = 1024;
  std::unordered_map<std::uint64_t, std::size_t> twin_of;
  const auto same_intervals = [&](std::size_t a, std::size_t b) {
    if (!same_bits(compute[a], compute[b]))
      return false;
    for (std::size_t k = 0; k < kCommKinds.size(); ++k)
      if (!same_bits(comm[a][k], comm[b][k]))
        return false;
    for (std::size_t k = 0; k < labels.size(); ++k)
      if (!same_bits(by_op[a][k], by_op[b][k]))
        return false;
    return true;
  };
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& s = u.gpus[g];
    if (const std::size_t rep = classes.representative(g); rep != g) {
      s = u.gpus[rep];
      s.gpu = static_cast<int>(g);
      for (std::size_t k = 0; k < kCommKinds.size(); ++k)
        u.exposed_by_kind_s[k] += s.exposed_by_kind_s[k];
      for (std::size_t k = 0; k < labels.size(); ++k)
        exposed_by_label_s[k] += op_split_of[rep][k];
      continue;
    }
    compute[g] = merge_intervals(std::move(compute[g]));
    for (std::size_t k = 0; k < kCommKinds.size(); ++k)
      comm[g][k] = merge_intervals(std::move(comm[g][k]));
    auto& lists = by_op[g];
    lists.resize(labels.size());
    for (auto& list : lists)
      list = merge_intervals(std::move(list));
    ContentHash hash;
    hash.add(compute[g]);
    for (const auto& list : comm[g])
      hash.add(list);
    for (const auto& list : lists)
      hash.add(list);
    auto twin = twin_of.find(hash.value());
    bool first = false;
    if (twin == twin_of.end() && twin_of.size() < kKeptTwins) {
      twin = twin_of.emplace(hash.value(), g).first;
      first = true;
    }
    if (twin != twin_of.end() && !first && same_intervals(twin->second, g)) {
      s = u.gpus[twin->second];
      s.gpu = static_cast<int>(g);
      for (std::size_t k = 0; k < kCommKinds.size(); ++k)
        u.exposed_by_kind_s[k] += s.exposed_by_kind_s[k];
      for (std::size_t k = 0; k < labels.size(); ++k)
        exposed_by_label_s[k] += op_split_of[twin->second][k];
      if (classes.folded())
        op_split_of[g] = op_split_of[twin->second];
      if (keep_comm_busy)  // the same kinds' lists, so their union
        comm_busy->list_of[g] = comm_busy->list_of[twin->second];
      compute[g] = {};
      comm[g] = {};
      lists = {};
      continue;
    }
    s.gpu = static_cast<int>(g);
    const auto& c = compute[g];
    std::vector<Interval> all;
    for (std::size_t k = 0; k < kCommKinds.size(); ++k) {
      s.comm_busy_by_kind_s[k] = total_length(comm[g][k]);
      all.insert(all.end(), comm[g][k].begin(), comm[g][k].end());
    }
    auto any = merge_intervals(std::move(all));
    s.compute_busy_s = total_length(c);
    s.comm_busy_s = total_length(any);
    s.overlap_s = overlap_length(c, any);
    if (keep_comm_busy) {
      comm_busy->list_of[g] = static_cast<std::uint32_t>(comm_busy->lists.size());
      comm_busy->lists.push_back(std::move(any));
    }
    const auto split = exposed_split(c, comm[g]);
    std::copy(split.begin(), split.end(), s.exposed_by_kind_s.begin());
    for (std::size_t k = 0; k < kCommKinds.size(); ++k)
      u.exposed_by_kind_s[k] += s.exposed_by_kind_s[k];
    auto op_split = exposed_split(c, lists);
    for (std::size_t k = 0; k < labels.size(); ++k)
      exposed_by_label_s[k] += op_split[k];
    if (!first) {  // not kept (another's hash and other intervals, or past kKeptTwins)
      compute[g] = {};
      comm[g] = {};
      lists = {};
    }
    op_split_of[g] = std::move(op_split);
  }

  if (gpus > 0)  // every label summed over at least one GPU, as before
    for (std::size_t k = 0; k < labels.size(); ++k)
      u.exposed_by_op_s[labels[k]] = exposed_by_label_s[k];

  // Links: bytes, busy time (union of flow lifetimes) and peak concurrency,
  // one link at a time from the flow index (a list per link of every flow's
  // interval and events, kept for all links at once, was the peak of a
  // large run's memory).
  // Per link orbit (analysis/fold_classes.hpp): an image link carries the
  // images of its representative's flows.
  u.links.resize(timeline.links.size());
  std::vector<std::pair<double, int>> ev;
  // A representative link whose flows, in list order, start and end at the
  // same instants as an earlier one's has the same busy time and peak (the
  // events sorted and swept are the same): found by a hash of the times and
  // checked flow by flow (analysis/content_hash.hpp). On a folded
  // 16,384-GPU run the links of every tensor-parallel group of a stage carry
  // their flows at the same instants.
  // The first link with each hash keeps its times (`kept_at`, into
  // `kept_times`; up to kKeptLinkTimes flows in all, 32 MB): a later link is
  // compared with them as read in its own pass (`mine`), not by reading both
  // links' records again. A candidate past the cap is compared record by
  // record.
  constexpr std::size_t kKeptLinkTimes = std::size_t{1} << 21;
  constexpr std::size_t kNotKept = static_cast<std::size_t>(-1);
  std::unordered_map<std::uint64_t, std::size_t> link_with_times;
  std::vector<std::size_t> kept_at(u.links.size(), kNotKept);
  std::vector<Interval> kept_times;
  std::vector<Interval> mine;
  const auto same_times = [&](std::size_t twin) {
    const auto theirs = link_classes.flows_of(twin);
    if (theirs.size() != mine.size())
      return false;
    if (kept_at[twin] != kNotKept) {
      const auto kept = kept_times.begin() + static_cast<std::ptrdiff_t>(kept_at[twin]);
      return std::equal(mine.begin(), mine.end(), kept, [](const Interval& x, const Interval& y) {
        return same_bits(x.first, y.first) && same_bits(x.second, y.second);
      });
    }
    for (std::size_t k = 0; k < mine.size(); ++k) {
      const FlowRecord& y = link_classes.record(theirs[k]);
      if (!same_bits(mine[k].first, y.start_s) || !same_bits(mine[k].second, y.end_s))
        return false;
    }
    return true;
  };
  for (std::size_t l = 0; l < u.links.size(); ++l) {
    auto& link = u.links[l];
    if (const std::size_t rep = link_classes.representative(l); rep != l) {
      link = u.links[rep];
      link.link = static_cast<int>(l);
      link.name = timeline.links[l].name;
      link.bandwidth_Bps = timeline.links[l].bandwidth_Bps;
      link.utilization = t > 0 && link.bandwidth_Bps > 0 ? link.bytes / (link.bandwidth_Bps * t) : 0;
      continue;
    }
    const auto on_link = link_classes.flows_of(l);
    bool ordered = true;  // every flow ends at or after its start
    // The flows in the list's order: bytes, and their times.
    mine.resize(on_link.size());
    for (std::size_t k = 0; k < on_link.size(); ++k) {
      const FlowRecord& flow = link_classes.record(on_link[k]);
      link.bytes += flow.bytes;
      ordered = ordered && flow.end_s >= flow.start_s;
      mine[k] = {flow.start_s, flow.end_s};
    }
    ContentHash times;
    times.add(mine);
    link.flows = on_link.size();
    link.link = static_cast<int>(l);
    link.name = timeline.links[l].name;
    link.bandwidth_Bps = timeline.links[l].bandwidth_Bps;
    link.utilization = t > 0 && link.bandwidth_Bps > 0 ? link.bytes / (link.bandwidth_Bps * t) : 0;
    const auto [twin, first] = link_with_times.try_emplace(times.value(), l);
    if (!first && same_times(twin->second)) {
      link.busy_s = u.links[twin->second].busy_s;
      link.busy_fraction = u.links[twin->second].busy_fraction;
      link.peak_concurrent_flows = u.links[twin->second].peak_concurrent_flows;
      continue;
    }
    if (first && kept_times.size() + mine.size() <= kKeptLinkTimes) {
      kept_at[l] = kept_times.size();
      kept_times.insert(kept_times.end(), mine.begin(), mine.end());
    }
    // Ends, then starts, in the list's order.
    ev.resize(2 * on_link.size());
    const auto middle = ev.begin() + static_cast<std::ptrdiff_t>(on_link.size());
    for (std::size_t k = 0; k < on_link.size(); ++k) {
      ev[k] = {mine[k].second, -1};
      middle[static_cast<std::ptrdiff_t>(k)] = {mine[k].first, +1};
    }
    // Ends sort before starts at the same time: back-to-back flows are not
    // concurrent. One sort gives the busy time (the flows' union) and the
    // peak (sweep_sorted_events). The ends (flows are listed as they end,
    // Timeline::flows) and the starts sorted apart and swept as merged: the
    // same sequence as one sort of both, as equal events are equal pairs.
    // The list itself stays in the timeline's order: the critical path's
    // link-load index puts the few links it reads in order of start.
    platforms::sort_nearly_sorted(ev.begin(), middle);
    platforms::sort_nearly_sorted(middle, ev.end());
    const EventSweep sweep = sweep_sorted_runs(ev, on_link.size());
    link.peak_concurrent_flows = sweep.peak;
    if (ordered) {
      link.busy_s = sweep.busy_s;
    } else {  // the sweep's premise does not hold: the intervals themselves
      link.busy_s = total_length(merge_intervals(mine));
    }
    link.busy_fraction = t > 0 ? link.busy_s / t : 0;
  }
  std::vector<int> order(u.links.size());
  for (std::size_t l = 0; l < order.size(); ++l)
    order[l] = static_cast<int>(l);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& x = u.links[static_cast<std::size_t>(a)];
    const auto& y = u.links[static_cast<std::size_t>(b)];
    if (x.utilization != y.utilization)
      return x.utilization > y.utilization;
    return x.busy_fraction > y.busy_fraction;
  });
  order.resize(std::min<std::size_t>(order.size(), 10));
  u.hottest = order;
  return u;
}

}  // namespace trainsim::analysis
