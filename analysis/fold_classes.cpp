#include "analysis/fold_classes.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "platforms/nearly_sorted.hpp"

namespace trainsim::analysis {

namespace {
constexpr std::uint32_t kUnset = std::numeric_limits<std::uint32_t>::max();

// Every GPU below `gpus` in an orbit of m under the rotation's powers:
// representative (the lowest of its orbit) and step; false otherwise.
bool gpu_orbits(const FoldImages& images, std::size_t gpus, std::vector<std::uint32_t>& rep,
                std::vector<std::uint16_t>& step) {
  const int m = images.order;
  if (gpus > images.endpoints.size())
    return false;
  rep.assign(gpus, kUnset);
  step.assign(gpus, 0);
  for (std::size_t g = 0; g < gpus; ++g) {
    if (rep[g] != kUnset)
      continue;
    if (images.endpoints.fixed(g))
      return false;
    for (int k = 0; k < m; ++k) {
      const std::size_t x = images.endpoints.power(g, k);
      if (x >= gpus || rep[x] != kUnset)
        return false;
      rep[x] = static_cast<std::uint32_t>(g);
      step[x] = static_cast<std::uint16_t>(k);
    }
  }
  return true;
}

}  // namespace

GpuClasses GpuClasses::of(const workloads::TaskGraph& graph, const Timeline& timeline, std::size_t gpus) {
  GpuClasses c;
  c.graph_ = &graph;
  c.timeline_ = &timeline;
  const auto identity = [&] {
    c.images_ = nullptr;
    std::vector<std::uint32_t>().swap(c.landings_);
    c.rep_.resize(gpus);
    c.step_.assign(gpus, 0);
    for (std::size_t g = 0; g < gpus; ++g)
      c.rep_[g] = static_cast<std::uint32_t>(g);
    return c;
  };
  const FoldImages* images = timeline.records.fold_images();
  if (images == nullptr || images->order <= 1 || !gpu_orbits(*images, gpus, c.rep_, c.step_))
    return identity();
  // Every record on a GPU of this run; no send within one orbit; each
  // spanning collective's record equal in times and stream to its image
  // GPU's record of the same task.
  // (task, gpu) and the recorded record, sorted by (task, gpu) once all are
  // in: a folded FSDP run has hundreds of thousands, one per member GPU of
  // each data-parallel gather and reduce-scatter.
  std::vector<std::pair<std::uint64_t, std::size_t>> spanning;
  const auto key = [&](workloads::TaskId task, std::size_t gpu) {
    return static_cast<std::uint64_t>(task) * gpus + gpu;
  };
  const auto& recorded = timeline.records.recorded();
  // landing_counts(): a record lands on its GPU's representative (one image
  // of it does) and a send's on its peer's; a spanning collective's only on
  // its own GPU (and peer) when that is a representative.
  c.landings_.assign(gpus, 0);
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    const auto& r = recorded[i];
    if (r.task >= graph.size() || r.gpu < 0 || static_cast<std::size_t>(r.gpu) >= gpus)
      return identity();
    const auto& task = graph[r.task];
    const bool fixed = images->tasks.fixed(r.task);
    const auto lands = [&](std::size_t gpu) {
      if (!fixed || c.rep_[gpu] == gpu)
        ++c.landings_[c.rep_[gpu]];
    };
    lands(static_cast<std::size_t>(r.gpu));
    if (task.kind == workloads::TaskKind::send && task.peer >= 0) {
      if (static_cast<std::size_t>(task.peer) >= gpus ||
          c.rep_[static_cast<std::size_t>(task.peer)] == c.rep_[static_cast<std::size_t>(r.gpu)])
        return identity();
      lands(static_cast<std::size_t>(task.peer));
    }
    if (fixed)
      spanning.emplace_back(key(r.task, static_cast<std::size_t>(r.gpu)), i);
  }
  // The replay records a collective's members one after the other: when
  // each spanning task's records are one run of consecutive entries, the
  // check runs per run (sorted by GPU), which is the whole check, as no
  // record of the task lies outside its run.
  if (const auto grouped = check_spanning_runs(spanning, recorded, graph.size(), *images)) {
    if (!*grouped)
      return identity();
    c.images_ = images;
    return c;
  }
  std::sort(spanning.begin(), spanning.end());
  for (std::size_t j = 1; j < spanning.size(); ++j)
    if (spanning[j].first == spanning[j - 1].first)
      return identity();  // two records of one task on one GPU
  for (const auto& [k, i] : spanning) {
    const auto& r = recorded[i];
    const std::size_t image = images->endpoints.power(static_cast<std::size_t>(r.gpu), 1);
    const std::uint64_t wanted = key(r.task, image);
    const auto it = std::lower_bound(spanning.begin(), spanning.end(), wanted,
                                     [](const auto& entry, std::uint64_t x) { return entry.first < x; });
    if (it == spanning.end() || it->first != wanted)
      return identity();
    const auto& s = recorded[it->second];
    if (std::tie(s.start_s, s.end_s, s.stream) != std::tie(r.start_s, r.end_s, r.stream))
      return identity();
  }
  c.images_ = images;
  return c;
}

std::optional<bool> GpuClasses::check_spanning_runs(
    const std::vector<std::pair<std::uint64_t, std::size_t>>& spanning,
    const std::vector<TaskRecord>& recorded, std::size_t tasks, const FoldImages& images) {
  const auto task_of = [&](std::size_t j) { return recorded[spanning[j].second].task; };
  // Runs: [a, b) of one task each; none of a task seen before.
  std::vector<char> seen(tasks, 0);
  for (std::size_t a = 0, b = 0; a < spanning.size(); a = b) {
    const auto task = task_of(a);
    if (seen[task])
      return std::nullopt;
    seen[task] = 1;
    for (b = a + 1; b < spanning.size() && task_of(b) == task;)
      ++b;
  }
  // (GPU, record) of a run, sorted by GPU.
  std::vector<std::pair<std::size_t, std::size_t>> run;
  for (std::size_t a = 0, b = 0; a < spanning.size(); a = b) {
    run.clear();
    for (b = a; b < spanning.size() && task_of(b) == task_of(a); ++b)
      run.emplace_back(static_cast<std::size_t>(recorded[spanning[b].second].gpu), spanning[b].second);
    std::sort(run.begin(), run.end());
    for (std::size_t j = 1; j < run.size(); ++j)
      if (run[j].first == run[j - 1].first)
        return false;  // two records of one task on one GPU
    for (const auto& [gpu, i] : run) {
      const auto& r = recorded[i];
      const std::size_t image = images.endpoints.power(gpu, 1);
      const auto it = std::lower_bound(run.begin(), run.end(), image,
                                       [](const auto& entry, std::size_t x) { return entry.first < x; });
      if (it == run.end() || it->first != image)
        return false;
      const auto& s = recorded[it->second];
      if (std::tie(s.start_s, s.end_s, s.stream) != std::tie(r.start_s, r.end_s, r.stream))
        return false;
    }
  }
  return true;
}

void LinkClasses::put_in_order(std::span<std::uint32_t> list,
                               std::vector<std::pair<double, std::uint32_t>>& keyed) {
  if (std::is_sorted(keyed.begin(), keyed.end()))
    return;
  platforms::sort_nearly_sorted(keyed.begin(), keyed.end());
  std::vector<std::uint32_t> listed(list.begin(), list.end());
  for (std::size_t k = 0; k < keyed.size(); ++k)
    list[k] = listed[keyed[k].second];
}

LinkClasses LinkClasses::of(const Timeline& timeline) {
  const auto links = timeline.links.size();
  const auto identity = [&] {
    LinkClasses c(timeline, FlowIndex::by_link(timeline));
    c.rep_.resize(links);
    for (std::size_t l = 0; l < links; ++l)
      c.rep_[l] = static_cast<std::uint32_t>(l);
    return c;
  };
  const FoldImages* images = timeline.flows.fold_images();
  if (images == nullptr || images->order <= 1)
    return identity();
  const int m = images->order;
  const auto& flows = timeline.flows.recorded();
  const auto& fl = timeline.flow_links;
  // Each link's image under the rotation, from the recorded routes' images:
  // image route k's j-th link maps to image route k + 1's.
  std::vector<std::size_t> next(links, kUnset);
  // The distinct recorded routes (first link, link count), each at its
  // first flow, for the check below.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> routes;
  std::vector<char> seen(fl.size() + 1, 0);
  for (const auto& f : flows) {
    if (f.first_link >= images->route_slot.size() || images->route_slot[f.first_link] == FoldImages::kNoRoute)
      return identity();
    if (seen[f.first_link])
      continue;
    seen[f.first_link] = 1;
    routes.emplace_back(f.first_link, f.link_count);
    for (int k = 0; k < m; ++k) {
      const std::size_t a = images->route_image(f.first_link, k);
      const std::size_t b = images->route_image(f.first_link, (k + 1) % m);
      if (a + f.link_count > fl.size() || b + f.link_count > fl.size())
        return identity();
      for (std::uint32_t j = 0; j < f.link_count; ++j) {
        const std::uint32_t from = fl[a + j], to = fl[b + j];
        if (from >= links || to >= links || (next[from] != kUnset && next[from] != to))
          return identity();
        next[from] = to;
      }
    }
  }
  for (const auto n : next)
    if (n == kUnset)
      return identity();
  const auto powers = PermutationPowers::of(next, m);
  if (!powers)
    return identity();
  std::vector<std::uint32_t> rep(links, kUnset);
  for (std::size_t l = 0; l < links; ++l) {
    if (rep[l] != kUnset)
      continue;
    if (powers->fixed(l))
      return identity();
    for (int k = 0; k < m; ++k)
      rep[powers->power(l, k)] = static_cast<std::uint32_t>(l);
  }
  // No recorded route crosses two links of one orbit.
  std::vector<char>().swap(seen);
  for (const auto& [first_link, link_count] : routes)
    for (std::uint32_t a = 0; a < link_count; ++a)
      for (std::uint32_t b = a + 1; b < link_count; ++b)
        if (rep[fl[first_link + a]] == rep[fl[first_link + b]])
          return identity();
  LinkClasses c(timeline, FlowIndex::by_recorded_link(timeline, rep));
  c.folded_ = true;
  c.rep_ = std::move(rep);
  return c;
}

}  // namespace trainsim::analysis
