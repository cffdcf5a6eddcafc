#include "workloads/kineto/profile_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "workloads/cost_model_per_op.hpp"

namespace trainsim::kineto {

using platforms::Curve;
using platforms::EfficiencyProfile;
using platforms::GpuSpec;
using workloads::OpKind;
using workloads::OpPass;
using workloads::TransformerOp;

namespace {

constexpr double kUs = 1e-6;

bool fitted_role(KernelRole role) {
  return role == KernelRole::gemm || role == KernelRole::attention || role == KernelRole::memory;
}

// Samples with the same work and class, merged: a step runs the same shape
// many times (every layer), and the fit's cost is per distinct shape.
struct Group {
  const WorkSample* first = nullptr;
  double count = 0;  // ops
  double kernels = 0;
  double time_s = 0;  // summed
  double mean_s() const { return time_s / count; }
};

std::vector<Group> grouped(const std::vector<const WorkSample*>& samples) {
  std::map<std::tuple<int, double, double, double, double, double, double, int, std::string, bool>, Group> by;
  for (const WorkSample* s : samples) {
    const auto& w = s->work;
    auto& g = by[{static_cast<int>(w.kind), w.m, w.n, w.k, w.batch, w.flops, w.bytes, s->kernels, w.dtype,
                  w.causal}];
    if (g.first == nullptr)
      g.first = s;
    g.count += 1;
    g.kernels += s->kernels;
    g.time_s += s->time_s;
  }
  std::vector<Group> out;
  for (auto& [key, g] : by)
    out.push_back(g);
  return out;
}

double predict(const WorkSample& s, const GpuSpec& gpu, const EfficiencyProfile& p) {
  return workloads::time_op(op_of(s), gpu, p).duration_s;
}

struct Totals {
  double measured = 0, predicted = 0, sse_log = 0, rms = 0;
};

Totals totals(const std::vector<Group>& groups, const GpuSpec& gpu, const EfficiencyProfile& p) {
  Totals t;
  double weight = 0, sq = 0;
  for (const auto& g : groups) {
    const double pred = predict(*g.first, gpu, p);
    t.measured += g.time_s;
    t.predicted += pred * g.count;
    if (pred > 0 && g.mean_s() > 0) {
      // Weighted by measured time: the kernels that make up the step
      // time count, not the thousands of tiny ones.
      const double r = std::log(pred / g.mean_s());
      t.sse_log += g.time_s * r * r;
      const double e = pred / g.mean_s() - 1;
      sq += g.count * e * e;
      weight += g.count;
    }
  }
  t.rms = weight > 0 ? std::sqrt(sq / weight) : 0;
  return t;
}

// The peak fraction at which the part's predicted total equals the
// measured one (monotone: a higher fraction, a shorter or equal time), at
// most 1; `set` writes a fraction into the profile.
double matching_fraction(const std::vector<Group>& groups, const GpuSpec& gpu, EfficiencyProfile& p,
                         const std::function<void(EfficiencyProfile&, double)>& set) {
  double measured = 0;
  for (const auto& g : groups)
    measured += g.time_s;
  const auto total_at = [&](double f) {
    set(p, f);
    return totals(groups, gpu, p).predicted;
  };
  if (total_at(1.0) >= measured) {
    set(p, 1.0);
    return 1.0;
  }
  double lo = 1e-6, hi = 1.0;  // total_at(lo) > measured >= total_at(hi)
  if (total_at(lo) <= measured) {
    set(p, lo);
    return lo;
  }
  for (int i = 0; i < 100; ++i) {
    const double mid = std::sqrt(lo * hi);
    (total_at(mid) > measured ? lo : hi) = mid;
  }
  const double f = std::sqrt(lo * hi);
  set(p, f);
  return f;
}

// Distinct values (5% apart) of a sample variable: a knee needs three.
int distinct(const std::vector<Group>& groups, const std::function<double(const WorkSample&)>& x) {
  std::vector<double> v;
  for (const auto& g : groups)
    v.push_back(x(*g.first));
  std::sort(v.begin(), v.end());
  int n = 0;
  double last = -1;
  for (double d : v)
    if (d > 0 && (last < 0 || d > last * 1.05)) {
      ++n;
      last = d;
    }
  return n;
}

// A curve the fit moves: its knee, how to write a knee into the profile,
// and the sample variable it is read at.
struct Knee {
  std::string name;
  double base = 0;
  double value = 0;
  std::function<void(EfficiencyProfile&, double)> set;
  std::function<double(const WorkSample&)> x;
  std::function<void(EfficiencyProfile&, double)> widen;  // gives the curve points down to a value
};

// Fits the knees (coordinate descent over log2 x_half, a grid then a
// golden-section refinement) with the peak fraction matched to the totals
// at each candidate; the peak fraction is left matched.
void fit_knees(std::vector<Knee>& knees, const std::vector<Group>& groups, const GpuSpec& gpu,
               EfficiencyProfile& p, const std::function<void(EfficiencyProfile&, double)>& set_fraction) {
  double weight = 0;
  for (const auto& g : groups)
    weight += g.time_s;
  const auto objective = [&](std::size_t i, double log2_knee) {
    knees[i].set(p, std::exp2(log2_knee));
    matching_fraction(groups, gpu, p, set_fraction);
    // A pull of 1e-6 per octave squared towards the base keeps the knee
    // where the samples do not see it.
    const double drift = log2_knee - std::log2(knees[i].base);
    return totals(groups, gpu, p).sse_log + 1e-6 * weight * drift * drift;
  };
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < knees.size(); ++i) {
      const double centre = std::log2(knees[i].base);
      double best = std::log2(knees[i].value), best_value = objective(i, best);
      for (double l = centre - 12; l <= centre + 12 + 1e-9; l += 0.25) {
        const double v = objective(i, l);
        if (v < best_value) {
          best_value = v;
          best = l;
        }
      }
      // Golden section on [best - 0.25, best + 0.25].
      double a = best - 0.25, b = best + 0.25;
      const double r = (std::sqrt(5.0) - 1) / 2;
      double c = b - r * (b - a), d = a + r * (b - a);
      double fc = objective(i, c), fd = objective(i, d);
      for (int it = 0; it < 40; ++it) {
        if (fc < fd) {
          b = d;
          d = c;
          fd = fc;
          c = b - r * (b - a);
          fc = objective(i, c);
        } else {
          a = c;
          c = d;
          fc = fd;
          d = a + r * (b - a);
          fd = objective(i, d);
        }
      }
      const double refined = (a + b) / 2;
      if (objective(i, refined) < best_value)
        best = refined;
      knees[i].value = std::exp2(best);
      knees[i].set(p, knees[i].value);
    }
  }
  matching_fraction(groups, gpu, p, set_fraction);
}

// The curve with more points below its first, at its own spacing, down to
// `lo` (their values as read before: flat beyond the ends); a small kernel's
// fixed cost lives down there. Above its last point a curve is near 1.
Curve widened(const Curve& c, double lo) {
  const auto& pts = c.points();
  if (pts.size() < 2)
    return c;
  const double step = pts[1].first / pts[0].first;
  std::vector<std::pair<double, double>> out;
  std::vector<double> below;
  for (double x = pts.front().first / step; x >= 1 && x * step > lo; x /= step)
    below.push_back(x);
  for (auto it = below.rbegin(); it != below.rend(); ++it)
    out.emplace_back(*it, c.at(*it));
  out.insert(out.end(), pts.begin(), pts.end());
  return Curve(std::move(out));
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1)
    return *mid;
  const double upper = *mid;
  return (upper + *std::max_element(v.begin(), mid)) / 2;
}

}  // namespace

double curve_knee(const Curve& curve) {
  const auto& pts = curve.points();
  if (pts.empty())
    return 1;
  const auto error = [&](double log2_knee) {
    double e = 0;
    for (const auto& [x, f] : pts) {
      const double r = std::log(1 / (1 + std::exp2(log2_knee) / x)) - std::log(f);
      e += r * r;
    }
    return e;
  };
  double best = std::log2(pts.front().first), best_e = error(best);
  for (double l = std::log2(pts.front().first) - 10; l <= std::log2(pts.back().first) + 10; l += 1.0 / 64) {
    const double e = error(l);
    if (e < best_e) {
      best_e = e;
      best = l;
    }
  }
  return std::exp2(best);
}

Curve knee_curve(const Curve& like, double x_half) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& [x, f] : like.points())
    pts.emplace_back(x, 1 / (1 + x_half / x));
  return Curve(std::move(pts));
}

std::vector<WorkSample> work_samples(const std::vector<RankTrace>& traces, const KernelClassTable& classes) {
  std::vector<WorkSample> out;
  for (const auto& t : traces) {
    // (op, role) -> sample; kernels without an op are samples of their own.
    std::map<std::pair<int, int>, std::size_t> of_op;
    for (const auto& k : t.kernels) {
      const KernelRole role = classes.at(k.kernel_class).role;
      if (k.step < 0 || !fitted_role(role))
        continue;
      if (k.op >= 0) {
        const auto [it, added] = of_op.emplace(std::pair{k.op, static_cast<int>(role)}, out.size());
        if (!added) {
          auto& s = out[it->second];
          s.kernels += 1;
          s.time_s += k.duration_us * kUs;
          continue;
        }
      }
      WorkSample s;
      s.kernel_class = k.kernel_class;
      s.rank = t.rank;
      s.kernels = 1;
      s.time_s = k.duration_us * kUs;
      if (k.op >= 0)
        s.work = op_work(t.ops[static_cast<std::size_t>(k.op)], role);
      out.push_back(std::move(s));
    }
  }
  return out;
}

TransformerOp op_of(const WorkSample& s) {
  const OpWork& w = s.work;
  TransformerOp op;
  op.name = std::string(to_string(w.kind));
  op.m = w.m;
  op.n = w.n;
  op.k = w.k;
  op.batch = w.batch;
  op.flops = w.flops;
  op.bytes = w.bytes;
  op.kernels = std::max(1, s.kernels);
  switch (w.kind) {
    case WorkKind::matmul:
      op.kind = OpKind::matmul;
      op.fp8 = w.dtype == "fp8";
      break;
    case WorkKind::batched_matmul:
      op.kind = OpKind::batched_matmul;
      break;
    case WorkKind::attention_forward:
      op.kind = OpKind::attention;
      op.pass = OpPass::forward;
      break;
    case WorkKind::attention_backward:
      op.kind = OpKind::attention;
      op.pass = OpPass::backward_input;
      break;
    case WorkKind::memory:
    case WorkKind::none:
      op.kind = OpKind::elementwise;
      break;
  }
  return op;
}

std::string part_of(const OpWork& w) {
  const bool half = w.dtype == "bf16" || w.dtype == "fp16";
  switch (w.kind) {
    case WorkKind::matmul:
      return w.dtype == "fp8" ? "matmul_fp8" : half ? "matmul" : "";
    case WorkKind::batched_matmul:
      return half ? "batched_matmul" : "";
    case WorkKind::attention_forward:
      return half ? "flash_forward" : "";
    case WorkKind::attention_backward:
      return half ? "flash_backward" : "";
    case WorkKind::memory:
      return "memory";
    case WorkKind::none:
      return "";
  }
  return "";
}

ProfileFit fit_profile(const std::vector<RankTrace>& traces, const KernelClassTable& classes,
                       const GpuSpec& gpu, const EfficiencyProfile& base, const ProfileFitOptions& options) {
  ProfileFit fit;
  EfficiencyProfile p = base;
  p.name = options.name;
  p.source = options.source;
  const auto samples = work_samples(traces, classes);
  std::map<std::string, std::vector<const WorkSample*>> by_part;
  for (const auto& s : samples)
    if (const std::string part = part_of(s.work); !part.empty())
      by_part[part].push_back(&s);

  // The parts, in fitting order: memory first (the others' memory-bound
  // kernels read its curve).
  struct Part {
    std::string name;
    platforms::MatmulEfficiency* matmul = nullptr;
    platforms::AttentionKernelEfficiency* attention = nullptr;
  };
  if (!p.matmul_fp8 && by_part.count("matmul_fp8"))
    fit.notes.push_back(fmt::format("{} FP8 GEMMs: {} has no FP8 curves to fit (not fitted)",
                                    by_part["matmul_fp8"].size(), base.name));
  std::vector<Part> parts = {{"memory"}, {"matmul", &p.matmul}, {"batched_matmul", &p.batched_matmul}};
  if (p.matmul_fp8 && gpu.peak_fp8_flops > 0)
    parts.push_back({"matmul_fp8", &*p.matmul_fp8});
  parts.push_back({"flash_forward", nullptr, &p.flash_forward});
  parts.push_back({"flash_backward", nullptr, &p.flash_backward});

  for (const auto& part : parts) {
    PartFit r;
    r.part = part.name;
    const auto found = by_part.find(part.name);
    const std::vector<Group> groups = found == by_part.end() ? std::vector<Group>{} : grouped(found->second);
    std::function<void(EfficiencyProfile&, double)> set_fraction;
    std::vector<Knee> knees;
    // The members are reached through the profile being fitted (`q`), so
    // the setters work on the copy matching_fraction is given.
    if (part.name == "memory") {
      set_fraction = [](EfficiencyProfile& q, double f) { q.memory.peak_fraction = f; };
      const double k = curve_knee(p.memory.bytes);
      knees.push_back(
          {"bytes", k, k,
           [](EfficiencyProfile& q, double x) { q.memory.bytes = knee_curve(q.memory.bytes, x); },
           [](const WorkSample& s) { return s.work.bytes / std::max(1, s.kernels); },
           [](EfficiencyProfile& q, double lo) { q.memory.bytes = widened(q.memory.bytes, lo); }});
      r.peak_fraction_before = p.memory.peak_fraction;
    } else if (part.matmul != nullptr) {
      const auto member = [name = part.name](EfficiencyProfile& q) -> platforms::MatmulEfficiency& {
        return name == "matmul" ? q.matmul : name == "batched_matmul" ? q.batched_matmul : *q.matmul_fp8;
      };
      set_fraction = [member](EfficiencyProfile& q, double f) { member(q).peak_fraction = f; };
      const double out = curve_knee(part.matmul->output_elements);
      const double depth = curve_knee(part.matmul->reduction_depth);
      knees.push_back({"output_elements", out, out,
                       [member](EfficiencyProfile& q, double x) {
                         member(q).output_elements = knee_curve(member(q).output_elements, x);
                       },
                       [](const WorkSample& s) { return s.work.m * s.work.n * s.work.batch; },
                       [member](EfficiencyProfile& q, double lo) {
                         member(q).output_elements = widened(member(q).output_elements, lo);
                       }});
      knees.push_back({"reduction_depth", depth, depth,
                       [member](EfficiencyProfile& q, double x) {
                         member(q).reduction_depth = knee_curve(member(q).reduction_depth, x);
                       },
                       [](const WorkSample& s) { return s.work.k; },
                       [member](EfficiencyProfile& q, double lo) {
                         member(q).reduction_depth = widened(member(q).reduction_depth, lo);
                       }});
      r.peak_fraction_before = part.matmul->peak_fraction;
    } else {
      const bool forward = part.name == "flash_forward";
      set_fraction = [forward](EfficiencyProfile& q, double f) {
        (forward ? q.flash_forward : q.flash_backward).peak_fraction = f;
      };
      r.peak_fraction_before = part.attention->peak_fraction;
    }
    if (groups.empty()) {
      r.method = "kept";
      r.peak_fraction_after = r.peak_fraction_before;
      r.note = "no samples in the traces: the base profile's values";
      fit.parts.push_back(std::move(r));
      continue;
    }
    r.method = "shapes";
    const Totals before = totals(groups, gpu, p);
    r.measured_s = before.measured;
    r.predicted_before_s = before.predicted;
    r.rms_error_before = before.rms;
    for (const auto& g : groups) {
      r.samples += static_cast<int>(g.count);
      r.kernels += static_cast<int>(g.kernels);
    }
    // A knee needs samples on three distinct values of its variable; its
    // curve then gets points over the samples' whole range (a curve is flat
    // beyond its last points, which would hide a small kernel's fixed cost).
    std::vector<Knee> free;
    for (auto& k : knees) {
      if (distinct(groups, k.x) >= 3) {
        double lo = 0;
        for (const auto& g : groups)
          if (const double x = k.x(*g.first); x > 0)
            lo = lo > 0 ? std::min(lo, x) : x;
        k.widen(p, lo);
        free.push_back(k);
      } else {
        r.note += fmt::format("{}{}: fewer than 3 distinct values, its curve kept",
                              r.note.empty() ? "" : "; ", k.name);
      }
    }
    if (free.empty())
      matching_fraction(groups, gpu, p, set_fraction);
    else
      fit_knees(free, groups, gpu, p, set_fraction);
    for (const auto& k : knees) {
      double after = k.base;
      for (const auto& f : free)
        if (f.name == k.name)
          after = f.value;
      r.knees.push_back({k.name, {k.base, after}});
    }
    const Totals after = totals(groups, gpu, p);
    r.predicted_after_s = after.predicted;
    r.rms_error_after = after.rms;
    r.peak_fraction_after = part.name == "memory" ? p.memory.peak_fraction
                            : part.matmul != nullptr
                                ? (part.name == "matmul"           ? p.matmul.peak_fraction
                                   : part.name == "batched_matmul" ? p.batched_matmul.peak_fraction
                                                                   : p.matmul_fp8->peak_fraction)
                            : part.name == "flash_forward" ? p.flash_forward.peak_fraction
                                                           : p.flash_backward.peak_fraction;
    if (r.peak_fraction_after >= 1.0)
      r.note += std::string(r.note.empty() ? "" : "; ") +
                "faster than the GPU's peak allows at this fraction: capped at 1 (check the GPU's peak)";
    fit.parts.push_back(std::move(r));
  }

  // Host overhead: the median interval between consecutive launches of a
  // host thread, within the steps.
  fit.host.before_s = base.host_overhead_per_kernel_s;
  std::vector<double> intervals;
  for (const auto& t : traces) {
    std::vector<int> in_step(t.launches.size(), 0);
    for (const auto& k : t.kernels)
      if (k.launch >= 0 && k.step >= 0)
        in_step[static_cast<std::size_t>(k.launch)] = 1;
    for (std::size_t i = 1; i < t.launches.size(); ++i)
      if (in_step[i] && in_step[i - 1] && t.launches[i].thread == t.launches[i - 1].thread)
        intervals.push_back((t.launches[i].start_us - t.launches[i - 1].start_us) * kUs);
  }
  fit.host.intervals = intervals.size();
  if (!intervals.empty())
    p.host_overhead_per_kernel_s = median(std::move(intervals));
  fit.host.after_s = p.host_overhead_per_kernel_s;

  // The error per kernel class, under the fitted profile.
  std::map<int, ClassFit> per_class;
  std::map<int, std::vector<const WorkSample*>> class_samples;
  for (const auto& s : samples) {
    ClassFit& c = per_class[s.kernel_class];
    c.kernel_class = classes.at(s.kernel_class).name;
    if (part_of(s.work).empty()) {
      ++c.unshaped;
      c.unshaped_s += s.time_s;
    } else {
      class_samples[s.kernel_class].push_back(&s);
    }
  }
  for (auto& [index, c] : per_class) {
    const auto groups = grouped(class_samples[index]);
    const Totals t = totals(groups, gpu, p);
    for (const auto& g : groups) {
      c.samples += static_cast<int>(g.count);
      c.kernels += static_cast<int>(g.kernels);
    }
    c.measured_s = t.measured;
    c.predicted_s = t.predicted;
    c.rms_error = t.rms;
    fit.classes.push_back(c);
  }
  fit.profile = std::move(p);
  return fit;
}

}  // namespace trainsim::kineto
