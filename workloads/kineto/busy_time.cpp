#include "workloads/kineto/busy_time.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim::kineto {

double union_length(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, start = 0, end = 0;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (e <= s)
      continue;
    if (!open || s > end) {
      if (open)
        total += end - start;
      start = s;
      end = e;
      open = true;
    } else {
      end = std::max(end, e);
    }
  }
  if (open)
    total += end - start;
  return total;
}

namespace {

constexpr double kSecondsPerMicrosecond = 1e-6;

// Priority of a class when several run at once: compute roles in table
// order, then copies, then communication.
std::vector<int> priorities(const KernelClassTable& classes) {
  std::vector<int> order;
  for (int pass = 0; pass < 3; ++pass)
    for (int c = 0; c < classes.size(); ++c) {
      const KernelRole role = classes.at(c).role;
      const int tier = is_compute(role) ? 0 : role == KernelRole::copy ? 1 : 2;
      if (tier == pass)
        order.push_back(c);
    }
  std::vector<int> rank(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    rank[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  return rank;
}

StepBreakdown step_breakdown(const std::vector<const Kernel*>& kernels, const KernelClassTable& classes,
                             const std::vector<int>& priority) {
  const std::size_t n = static_cast<std::size_t>(classes.size());
  StepBreakdown b;
  b.kernels.assign(n, 0);
  b.kernel_s.assign(n, 0);
  b.busy_share_s.assign(n, 0);
  std::vector<std::pair<double, double>> all, compute, communication;
  std::map<std::pair<int, std::int64_t>, std::vector<std::pair<double, double>>> streams;
  // Sweep events: (time, +1 start / -1 end, class).
  struct Edge {
    double t;
    int delta;
    int c;
  };
  std::vector<Edge> edges;
  for (const Kernel* k : kernels) {
    const auto c = static_cast<std::size_t>(k->kernel_class);
    ++b.kernels[c];
    b.kernel_s[c] += k->duration_us * kSecondsPerMicrosecond;
    const std::pair<double, double> span{k->start_us, k->end_us()};
    all.push_back(span);
    streams[{k->device, k->stream}].push_back(span);
    const KernelRole role = classes.at(k->kernel_class).role;
    if (is_compute(role))
      compute.push_back(span);
    else if (role == KernelRole::communication)
      communication.push_back(span);
    if (k->duration_us > 0) {
      edges.push_back({k->start_us, +1, k->kernel_class});
      edges.push_back({k->end_us(), -1, k->kernel_class});
    }
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : a.delta < b.delta;  // ends before starts at one instant
  });
  std::vector<int> active(n, 0);
  double previous = 0;
  for (const auto& e : edges) {
    if (e.t > previous) {
      int owner = -1;
      for (std::size_t c = 0; c < n; ++c)
        if (active[c] > 0 && (owner < 0 || priority[c] < priority[static_cast<std::size_t>(owner)]))
          owner = static_cast<int>(c);
      if (owner >= 0)
        b.busy_share_s[static_cast<std::size_t>(owner)] += (e.t - previous) * kSecondsPerMicrosecond;
    }
    previous = e.t;
    active[static_cast<std::size_t>(e.c)] += e.delta;
  }
  b.busy_s = union_length(all) * kSecondsPerMicrosecond;
  b.compute_s = union_length(compute) * kSecondsPerMicrosecond;
  b.communication_s = union_length(communication) * kSecondsPerMicrosecond;
  for (int c = 0; c < classes.size(); ++c)
    if (classes.at(c).role == KernelRole::communication)
      b.exposed_communication_s += b.busy_share_s[static_cast<std::size_t>(c)];
  for (auto& [stream, spans] : streams)
    b.stream_busy_s[stream] = union_length(std::move(spans)) * kSecondsPerMicrosecond;
  return b;
}

}  // namespace

RankBreakdown break_down(const RankTrace& trace, const KernelClassTable& classes) {
  RankBreakdown r;
  r.rank = trace.rank;
  const auto priority = priorities(classes);
  std::vector<std::vector<const Kernel*>> by_step(trace.steps.size());
  for (const auto& k : trace.kernels)
    if (k.step >= 0)
      by_step[static_cast<std::size_t>(k.step)].push_back(&k);
  const std::size_t n = static_cast<std::size_t>(classes.size());
  StepBreakdown& m = r.mean;
  m.kernels.assign(n, 0);
  m.kernel_s.assign(n, 0);
  m.busy_share_s.assign(n, 0);
  std::vector<double> kernel_counts(n, 0);
  for (std::size_t s = 0; s < trace.steps.size(); ++s) {
    StepBreakdown b = step_breakdown(by_step[s], classes, priority);
    b.step = static_cast<int>(s);
    b.step_s = trace.steps[s].duration_us() * kSecondsPerMicrosecond;
    b.idle_s = std::max(0.0, b.step_s - b.busy_s);
    m.step_s += b.step_s;
    m.busy_s += b.busy_s;
    m.idle_s += b.idle_s;
    m.compute_s += b.compute_s;
    m.communication_s += b.communication_s;
    m.exposed_communication_s += b.exposed_communication_s;
    for (std::size_t c = 0; c < n; ++c) {
      kernel_counts[c] += b.kernels[c];
      m.kernel_s[c] += b.kernel_s[c];
      m.busy_share_s[c] += b.busy_share_s[c];
    }
    for (const auto& [stream, busy] : b.stream_busy_s)
      m.stream_busy_s[stream] += busy;
    r.steps.push_back(std::move(b));
  }
  if (!r.steps.empty()) {
    const double steps = static_cast<double>(r.steps.size());
    for (double* v :
         {&m.step_s, &m.busy_s, &m.idle_s, &m.compute_s, &m.communication_s, &m.exposed_communication_s})
      *v /= steps;
    for (std::size_t c = 0; c < n; ++c) {
      m.kernels[c] = static_cast<int>(std::lround(kernel_counts[c] / steps));
      m.kernel_s[c] /= steps;
      m.busy_share_s[c] /= steps;
    }
    for (auto& [stream, busy] : m.stream_busy_s)
      busy /= steps;
  }
  return r;
}

}  // namespace trainsim::kineto
