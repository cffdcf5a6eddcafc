#include "analysis/gpu_power.hpp"

#include <algorithm>

namespace trainsim::analysis {
namespace {

// A change of what one GPU does: a compute task starts (power > 0) or ends
// (power < 0), or a communication starts (+1) or ends (-1).
struct Change {
  double at_s;
  double compute_W;
  int communications;
};

enum class Doing { compute, communication, waiting, idle };

// Walks every GPU's spans in time order: `on_span(gpu, doing, lo, hi,
// compute_W)`. `compute_watts(gpu, task)` gives a compute task's power (any
// positive value when only the spans matter).
// (Templates, not std::function: they run for every record and span of a
// 16k-GPU run.)
// Only the representatives of `classes` (analysis/fold_classes.hpp): an image
// GPU has its representative's spans.
template <class ComputeWatts, class OnSpan>
void for_each_span(const workloads::TaskGraph& graph, const Timeline& timeline, const GpuClasses& classes,
                   std::size_t gpus, const ComputeWatts& compute_watts, const OnSpan& on_span) {
  const auto on_rep = [&](int gpu) {
    return gpu >= 0 && static_cast<std::size_t>(gpu) < gpus &&
           classes.is_representative(static_cast<std::size_t>(gpu));
  };
  std::vector<std::vector<Change>> changes(gpus);
  if (const auto landing = classes.landing_counts(); landing.size() == gpus) {
    // Two changes for each record landing on the GPU, at most (the classes
    // counted them): each list allocated once, without a pass to count.
    for (std::size_t g = 0; g < gpus; ++g)
      if (landing[g] > 0 && classes.is_representative(g))
        changes[g].reserve(2 * std::size_t{landing[g]} + 1);
  } else {
    // Each GPU's changes counted first, so that its list is allocated once.
    std::vector<std::size_t> count(gpus, 0);
    const auto counted = [&](int gpu) {
      if (on_rep(gpu))
        count[static_cast<std::size_t>(gpu)] += 2;
    };
    classes.for_each_record([&](const TaskRecord& r) {
      if (r.end_s <= r.start_s)
        return;
      counted(r.gpu);
      const auto& task = graph[r.task];
      if (!workloads::is_compute(task.kind) && task.kind == workloads::TaskKind::send)
        counted(task.peer);
    });
    for (std::size_t g = 0; g < gpus; ++g)
      if (count[g] > 0)
        changes[g].reserve(count[g] + 1);
  }
  auto communicating = [&](int gpu, const TaskRecord& r) {
    if (!on_rep(gpu))
      return;
    changes[static_cast<std::size_t>(gpu)].push_back({r.start_s, 0, +1});
    changes[static_cast<std::size_t>(gpu)].push_back({r.end_s, 0, -1});
  };
  classes.for_each_record([&](const TaskRecord& r) {
    if (r.end_s <= r.start_s)
      return;
    const auto& task = graph[r.task];
    if (workloads::is_compute(task.kind)) {
      if (!on_rep(r.gpu))
        return;
      const double watts = compute_watts(r.gpu, task);
      changes[static_cast<std::size_t>(r.gpu)].push_back({r.start_s, watts, 0});
      changes[static_cast<std::size_t>(r.gpu)].push_back({r.end_s, -watts, 0});
      return;
    }
    communicating(r.gpu, r);
    // A send is recorded on its sender; the receiver runs NCCL's receive.
    if (task.kind == workloads::TaskKind::send)
      communicating(task.peer, r);
  });
  for (std::size_t g = 0; g < gpus; ++g) {
    if (!classes.is_representative(g))
      continue;
    auto& list = changes[g];
    std::sort(list.begin(), list.end(), [](const Change& a, const Change& b) { return a.at_s < b.at_s; });
    list.push_back({std::max(timeline.end_s, list.empty() ? 0.0 : list.back().at_s), 0, 0});
    double now = 0, compute_W = 0;
    int computes = 0, communications = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Change& c = list[i];
      const double span = c.at_s - now;
      if (span > 0) {
        Doing doing = Doing::idle;
        if (computes > 0) {
          doing = Doing::compute;
        } else if (communications > 0) {
          doing = Doing::communication;
        } else {
          // Nothing ran: waiting in NCCL if a communication starts when it ends.
          for (std::size_t j = i; j < list.size() && list[j].at_s == c.at_s; ++j)
            if (list[j].communications > 0)
              doing = Doing::waiting;
        }
        on_span(g, doing, now, c.at_s, compute_W);
        now = c.at_s;
      }
      if (c.compute_W > 0) {
        ++computes;
        compute_W = c.compute_W;
      } else if (c.compute_W < 0) {
        --computes;
      }
      communications += c.communications;
    }
  }
}

}  // namespace

std::vector<GpuActivity> gpu_activity(const workloads::TaskGraph& graph, const Timeline& timeline,
                                      const platforms::ClusterSpec& cluster) {
  return gpu_activity(graph, timeline, cluster,
                      GpuClasses::of(graph, timeline, static_cast<std::size_t>(cluster.gpu_count())));
}

std::vector<GpuActivity> gpu_activity(const workloads::TaskGraph& graph, const Timeline& timeline,
                                      const platforms::ClusterSpec& cluster, const GpuClasses& given,
                                      std::vector<std::vector<Interval>>* nccl_waits) {
  const auto gpus = static_cast<std::size_t>(cluster.gpu_count());
  if (given.size() != gpus) {
    if (nccl_waits != nullptr)
      nccl_waits->clear();
    return gpu_activity(graph, timeline, cluster);
  }
  const GpuClasses& classes = given;
  std::vector<GpuActivity> out(gpus);
  // The waits are nccl_wait_spans' when the walk's spans are its: every
  // compute task counted as computing (a positive power), and as many GPUs.
  std::vector<std::vector<Interval>> waits;
  bool same_walk = nccl_waits != nullptr && static_cast<std::size_t>(graph.gpu_count) == gpus;
  if (same_walk)
    waits.resize(gpus);
  // Each GPU's spec located once (a search of the cluster's node groups),
  // not once per compute record and span.
  std::vector<const platforms::GpuSpec*> specs(gpus, nullptr);
  const auto spec_of = [&](std::size_t g) -> const platforms::GpuSpec& {
    if (specs[g] == nullptr)
      specs[g] = &cluster.gpu_of(static_cast<int>(g));
    return *specs[g];
  };
  for_each_span(
      graph, timeline, classes, gpus,
      [&](int gpu, const workloads::Task& task) {
        const double watts =
            spec_of(static_cast<std::size_t>(gpu)).compute_power_W(task.memory_bound_fraction);
        same_walk = same_walk && watts > 0;
        return watts;
      },
      [&](std::size_t g, Doing doing, double lo, double hi, double compute_W) {
        const auto& spec = spec_of(g);
        auto& a = out[g];
        const double span = hi - lo;
        if (doing == Doing::waiting && same_walk)
          waits[g].emplace_back(lo, hi);
        switch (doing) {
          case Doing::compute:
            a.compute_s += span;
            a.energy_J += compute_W * span;
            break;
          case Doing::communication:
            a.communication_s += span;
            a.energy_J += spec.communication_power_W * span;
            break;
          case Doing::waiting:
            a.waiting_s += span;
            a.energy_J += spec.communication_power_W * span;
            break;
          case Doing::idle:
            a.idle_s += span;
            a.energy_J += spec.idle_power_W * span;
            break;
        }
      });
  for (std::size_t g = 0; g < gpus; ++g)
    out[g] = out[classes.representative(g)];
  if (nccl_waits != nullptr)
    *nccl_waits = same_walk ? std::move(waits) : nccl_wait_spans(graph, timeline, classes);
  return out;
}

std::vector<std::vector<Interval>> nccl_wait_spans(const workloads::TaskGraph& graph,
                                                   const Timeline& timeline) {
  const auto classes = GpuClasses::of(graph, timeline, static_cast<std::size_t>(graph.gpu_count));
  auto out = nccl_wait_spans(graph, timeline, classes);
  for (std::size_t g = 0; g < out.size(); ++g)
    if (!classes.is_representative(g))
      out[g] = out[classes.representative(g)];
  return out;
}

std::vector<std::vector<Interval>> nccl_wait_spans(const workloads::TaskGraph& graph,
                                                   const Timeline& timeline, const GpuClasses& classes) {
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  std::vector<std::vector<Interval>> out(gpus);
  for_each_span(
      graph, timeline, classes, gpus, [](int, const workloads::Task&) { return 1.0; },
      [&](std::size_t g, Doing doing, double lo, double hi, double) {
        if (doing == Doing::waiting)
          out[g].emplace_back(lo, hi);
      });
  return out;
}

}  // namespace trainsim::analysis
