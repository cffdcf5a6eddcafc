#include "analysis/kineto/trace_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "workloads/kineto/profile_fit.hpp"

namespace trainsim::analysis {

using kineto::Kernel;
using kineto::KernelRole;
using kineto::RankTrace;

namespace {

constexpr double kSecondsPerUs = 1e-6;
constexpr double kTimeResolution_us = 2e-3;

enum class Part { compute, communication, copy };

Part part_of(KernelRole role) {
  if (kineto::is_compute(role))
    return Part::compute;
  return role == KernelRole::copy ? Part::copy : Part::communication;
}

}  // namespace

double DiffRow::relative() const {
  if (measured == 0)
    return simulated == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return simulated / measured - 1;
}

const DiffRow* TraceDiff::find(const std::string& metric, int rank) const {
  for (const auto& r : rows)
    if (r.metric == metric && r.rank == rank)
      return &r;
  return nullptr;
}

CriticalPathSplit gpu_critical_path(const RankTrace& trace, const kineto::KernelClassTable& classes) {
  CriticalPathSplit split;
  std::vector<const Kernel*> ks;
  for (const auto& k : trace.kernels)
    if (k.step >= 0)
      ks.push_back(&k);
  if (ks.empty() || trace.steps.empty())
    return split;
  std::stable_sort(ks.begin(), ks.end(),
                   [](const Kernel* a, const Kernel* b) { return a->end_us() < b->end_us(); });
  // After the last kernel, to the last step's end (if the GPU finished first).
  const double last_end = trace.steps.back().end_us;
  if (ks.back()->end_us() < last_end)
    split.idle_s += (last_end - ks.back()->end_us()) * kSecondsPerUs;
  std::size_t current = ks.size() - 1;
  for (;;) {
    const Kernel& k = *ks[current];
    const double on_path = k.duration_us * kSecondsPerUs;
    switch (part_of(classes.at(k.kernel_class).role)) {
      case Part::compute:
        split.compute_s += on_path;
        break;
      case Part::communication:
        split.communication_s += on_path;
        break;
      case Part::copy:
        split.copy_s += on_path;
        break;
    }
    // The kernel that ended last before this one started (any stream),
    // within 2 ns: Kineto writes start and duration to the nanosecond each,
    // and a kernel that followed another at once must still find it.
    const auto it = std::upper_bound(ks.begin(), ks.begin() + static_cast<std::ptrdiff_t>(current),
                                     k.start_us + kTimeResolution_us,
                                     [](double t, const Kernel* x) { return t < x->end_us(); });
    if (it == ks.begin())
      break;  // the first kernel: the path starts there
    current = static_cast<std::size_t>(it - ks.begin()) - 1;
    split.idle_s += std::max(0.0, k.start_us - ks[current]->end_us()) * kSecondsPerUs;
  }
  const double steps = static_cast<double>(trace.steps.size());
  split.compute_s /= steps;
  split.communication_s /= steps;
  split.copy_s /= steps;
  split.idle_s /= steps;
  return split;
}

namespace {

struct RankFigures {
  std::map<std::string, double> metrics;
};

RankFigures figures(const RankTrace& t, const kineto::KernelClassTable& classes) {
  RankFigures f;
  const auto b = kineto::break_down(t, classes);
  const auto& m = b.mean;
  f.metrics["step_time_s"] = m.step_s;
  f.metrics["busy_s"] = m.busy_s;
  f.metrics["idle_s"] = m.idle_s;
  f.metrics["compute_s"] = m.compute_s;
  f.metrics["communication_s"] = m.communication_s;
  f.metrics["exposed_communication_s"] = m.exposed_communication_s;
  for (int c = 0; c < classes.size(); ++c)
    f.metrics["class." + classes.at(c).name + "_s"] = m.kernel_s[static_cast<std::size_t>(c)];
  // Streams by what they mostly run.
  const double steps = std::max<std::size_t>(1, t.steps.size());
  std::map<std::pair<int, std::int64_t>, std::map<Part, double>> time_on;
  for (const auto& k : t.kernels)
    if (k.step >= 0)
      time_on[{k.device, k.stream}][part_of(classes.at(k.kernel_class).role)] += k.duration_us;
  double compute_streams = 0, communication_streams = 0;
  for (const auto& [stream, busy] : m.stream_busy_s) {
    const auto& parts = time_on[stream];
    Part most = Part::compute;
    double best = -1;
    for (const auto& [p, us] : parts)
      if (us > best) {
        best = us;
        most = p;
      }
    (most == Part::communication ? communication_streams : compute_streams) += busy;
  }
  f.metrics["streams.compute_s"] = compute_streams;
  f.metrics["streams.communication_s"] = communication_streams;
  const CriticalPathSplit path = gpu_critical_path(t, classes);
  f.metrics["critical_path.compute_s"] = path.compute_s;
  f.metrics["critical_path.communication_s"] = path.communication_s;
  f.metrics["critical_path.copy_s"] = path.copy_s;
  f.metrics["critical_path.idle_s"] = path.idle_s;
  double gemm = 0, attention = 0;
  for (const auto& s : kineto::work_samples({t}, classes)) {
    if (s.work.kind == kineto::WorkKind::matmul || s.work.kind == kineto::WorkKind::batched_matmul)
      gemm += s.work.flops;
    else if (s.work.kind == kineto::WorkKind::attention_forward ||
             s.work.kind == kineto::WorkKind::attention_backward)
      attention += s.work.flops;
  }
  f.metrics["flops.gemm"] = gemm / steps;
  f.metrics["flops.attention"] = attention / steps;
  return f;
}

// The order metrics are listed in.
std::vector<std::string> metric_order(const kineto::KernelClassTable& classes) {
  std::vector<std::string> order = {"step_time_s",
                                    "busy_s",
                                    "idle_s",
                                    "compute_s",
                                    "communication_s",
                                    "exposed_communication_s",
                                    "streams.compute_s",
                                    "streams.communication_s",
                                    "critical_path.compute_s",
                                    "critical_path.communication_s",
                                    "critical_path.copy_s",
                                    "critical_path.idle_s"};
  for (const auto& c : classes.classes())
    order.push_back("class." + c.name + "_s");
  order.push_back("flops.gemm");
  order.push_back("flops.attention");
  return order;
}

}  // namespace

TraceDiff diff_traces(const std::vector<RankTrace>& measured, const std::vector<RankTrace>& simulated,
                      const kineto::KernelClassTable& classes) {
  TraceDiff d;
  std::vector<RankFigures> fm, fs;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    d.ranks.push_back(measured[i].rank);
    fm.push_back(figures(measured[i], classes));
    fs.push_back(figures(simulated.at(i), classes));
  }
  const double n = std::max<std::size_t>(1, measured.size());
  for (const auto& metric : metric_order(classes)) {
    DiffRow all{metric, -1, 0, 0};
    std::vector<DiffRow> per_rank;
    for (std::size_t i = 0; i < fm.size(); ++i) {
      DiffRow r{metric, d.ranks[i], fm[i].metrics[metric], fs[i].metrics[metric]};
      all.measured += r.measured / n;
      all.simulated += r.simulated / n;
      per_rank.push_back(r);
    }
    // A class neither side ran is left out.
    if (metric.rfind("class.", 0) == 0 && all.measured == 0 && all.simulated == 0)
      continue;
    d.rows.push_back(all);
    d.rows.insert(d.rows.end(), per_rank.begin(), per_rank.end());
  }
  bool shapes = false;
  for (const auto& t : measured)
    shapes = shapes || t.shapes_recorded;
  if (const DiffRow* f = d.find("flops.gemm"); f != nullptr) {
    if (!shapes)
      d.notes.push_back(
          "the traces recorded no shapes (record_shapes=False): the model's FLOPs are not compared");
    else if (f->measured > 0 && std::abs(f->relative()) > 0.10)
      d.notes.push_back(
          fmt::format("the scenario's GEMM FLOPs per step differ from the traces' by {:+.0f}%: does the "
                      "scenario describe the "
                      "traced model (layers, hidden size, sequence length, micro-batch, tp)?",
                      100 * f->relative()));
  }
  return d;
}

}  // namespace trainsim::analysis
