#include "workloads/kineto/collective_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

namespace trainsim::kineto {
namespace {

// A fit that leaves more error than this per sample is reported, not
// written into the calibrated scenario.
constexpr double kMaxWrittenError = 0.25;

struct Ring {
  double f = 0;
  double steps = 0;
};

Ring ring_of(const std::string& collective, int n) {
  const double m = std::max(1, n);
  if (collective == "allreduce" || collective == "all_reduce")
    return {2 * (m - 1) / m, 2 * (m - 1)};
  if (collective == "allgather" || collective == "all_gather" || collective == "_allgather_base" ||
      collective == "all_gather_into_tensor" || collective == "reduce_scatter" ||
      collective == "_reduce_scatter_base" || collective == "reduce_scatter_tensor")
    return {(m - 1) / m, m - 1};
  if (collective == "broadcast")
    return {1, m - 1};
  return {};
}

std::string canonical(const std::string& c) {
  if (c == "all_reduce")
    return "allreduce";
  if (c == "all_gather" || c == "_allgather_base" || c == "all_gather_into_tensor")
    return "allgather";
  if (c == "_reduce_scatter_base" || c == "reduce_scatter_tensor")
    return "reduce_scatter";
  return c;
}

// nccl-tests' size S of a collective from PyTorch's message sizes.
double size_of(const CollectiveInfo& c) {
  const double e = nccl_dtype_bytes(c.dtype);
  const std::string kind = canonical(c.collective);
  if (kind == "allgather")
    return c.out_elements > 0 ? c.out_elements * e : c.in_elements * e * c.group_size;
  return c.in_elements * e;
}

}  // namespace

double nccl_dtype_bytes(const std::string& dtype) {
  static const std::unordered_map<std::string, double> sizes = {
      {"Float", 4},   {"float", 4},  {"Float32", 4},       {"BFloat16", 2},    {"Half", 2},
      {"Float16", 2}, {"Double", 8}, {"Long", 8},          {"Int", 4},         {"Byte", 1},
      {"Char", 1},    {"Bool", 1},   {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
  };
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0.0 : it->second;
}

CollectiveFit fit_collectives(const std::vector<RankTrace>& traces, const KernelClassTable& classes,
                              const platforms::ClusterSpec& cluster) {
  CollectiveFit fit;
  std::map<std::tuple<std::string, int, bool, double>, CollectiveSample> by;
  std::map<std::string, int> skipped;
  const int gpus = cluster.gpu_count();
  for (const auto& t : traces) {
    for (const auto& k : t.kernels) {
      if (k.collective < 0 || k.step < 0 || classes.at(k.kernel_class).role != KernelRole::communication)
        continue;
      const CollectiveInfo& c = t.collectives[static_cast<std::size_t>(k.collective)];
      const std::string kind = canonical(c.collective);
      if (ring_of(kind, 2).f == 0) {
        ++skipped[kind.empty() ? "unknown collective" : kind];
        continue;
      }
      if (!c.metadata || c.in_elements <= 0 || nccl_dtype_bytes(c.dtype) <= 0) {
        ++skipped["no message size (NCCL metadata)"];
        continue;
      }
      std::vector<int> ranks = c.group_ranks;
      if (ranks.empty())
        for (const auto& g : t.groups)
          if (g.name == c.group_name)
            ranks = g.ranks;
      if (ranks.empty() || c.group_size < 2) {
        ++skipped["no group ranks"];
        continue;
      }
      bool outside = false, across = false;
      int domain = -1;
      for (int r : ranks) {
        if (r < 0 || r >= gpus) {
          outside = true;
          break;
        }
        const int d = cluster.locate(r).domain;
        across = across || (domain >= 0 && d != domain);
        domain = d;
      }
      if (outside) {
        ++skipped[fmt::format("ranks beyond the scenario's {} GPUs", gpus)];
        continue;
      }
      const double bytes = size_of(c);
      CollectiveSample& s = by[{kind, c.group_size, across, bytes}];
      const double time = k.duration_us * 1e-6;
      if (s.kernels == 0 || time < s.time_s)
        s.time_s = time;
      s.collective = kind;
      s.group_size = c.group_size;
      s.across_domains = across;
      s.bytes = bytes;
      ++s.kernels;
    }
  }
  for (const auto& [reason, n] : skipped)
    fit.notes.push_back(fmt::format("{} communication kernels not fitted: {}", n, reason));
  for (auto& [key, s] : by)
    fit.samples.push_back(s);

  const auto& group = cluster.groups.front();
  const double launch = cluster.collectives.launch_latency_s;
  for (const bool across : {false, true}) {
    LinkFit l;
    l.link = across ? "network" : "nvlink";
    l.launch_latency_s = launch;
    if (across) {
      l.bandwidth_Bps = group.nic.bandwidth_Bps * group.nics_per_node / std::max(1, group.gpus_per_node);
      l.efficiency_before = cluster.fabric.efficiency;
      l.hop_latency_before_s = group.nic.latency_s;
    } else {
      l.bandwidth_Bps = group.nvlink.bandwidth_Bps;
      l.efficiency_before = group.nvlink.efficiency;
      l.hop_latency_before_s = group.nvlink.latency_s;
    }
    std::vector<const CollectiveSample*> mine;
    for (const auto& s : fit.samples)
      if (s.across_domains == across)
        mine.push_back(&s);
    l.samples = static_cast<int>(mine.size());
    const auto rms = [&](double eff, double hop) {
      double sq = 0;
      for (const auto* s : mine) {
        const Ring r = ring_of(s->collective, s->group_size);
        const double pred = launch + r.steps * hop + s->bytes * r.f / (l.bandwidth_Bps * eff);
        sq += std::pow(pred / s->time_s - 1, 2);
      }
      return mine.empty() ? 0.0 : std::sqrt(sq / static_cast<double>(mine.size()));
    };
    l.efficiency_after = l.efficiency_before;
    l.hop_latency_after_s = l.hop_latency_before_s;
    if (mine.empty() || l.bandwidth_Bps <= 0) {
      l.note = "no samples: the cluster's values kept";
      fit.links.push_back(l);
      continue;
    }
    l.rms_error_before = rms(l.efficiency_before, l.hop_latency_before_s);
    // Weighted least squares of (steps x hop + x / eff - y) / t with
    // x = S f / bandwidth, y = t - launch: unknowns a = hop, b = 1 / eff.
    double kk = 0, kx = 0, xx = 0, ky = 0, xy = 0;
    std::size_t sizes = 0;
    double last = -1;
    for (const auto* s : mine) {
      const Ring r = ring_of(s->collective, s->group_size);
      const double w = 1 / (s->time_s * s->time_s);
      const double x = s->bytes * r.f / l.bandwidth_Bps, y = s->time_s - launch;
      kk += w * r.steps * r.steps;
      kx += w * r.steps * x;
      xx += w * x * x;
      ky += w * r.steps * y;
      xy += w * x * y;
      if (std::abs(s->bytes - last) > 1e-9 * s->bytes) {
        ++sizes;
        last = s->bytes;
      }
    }
    double a = l.hop_latency_before_s, b = 0;
    const double det = kk * xx - kx * kx;
    if (sizes >= 2 && det > 1e-12 * kk * xx) {
      a = (ky * xx - kx * xy) / det;
      b = (kk * xy - kx * ky) / det;
    }
    if (sizes < 2 || det <= 1e-12 * kk * xx || a < 0 || b <= 0) {
      // One size (or an unphysical fit): the hop latency as it is (0 if it
      // came out negative), the efficiency alone.
      a = sizes < 2 || det <= 1e-12 * kk * xx ? l.hop_latency_before_s : 0.0;
      b = (xy - a * kx) / xx;
      if (sizes < 2)
        l.note = "one message size: the hop latency kept";
    }
    l.efficiency_after = std::clamp(b > 0 ? 1 / b : 1.0, 0.01, 1.0);
    if (b > 0 && 1 / b > 1.0)
      l.note += std::string(l.note.empty() ? "" : "; ") +
                "faster than the link's bandwidth: efficiency capped at 1";
    l.hop_latency_after_s = std::max(0.0, a);
    l.rms_error_after = rms(l.efficiency_after, l.hop_latency_after_s);
    if (l.rms_error_after > kMaxWrittenError) {
      // The kernels' times are not the ring's: they include waiting (for
      // peers, or for compute the collective overlaps). Said, not written.
      l.note += fmt::format(
          "{}the fit leaves {:.0f}% per sample: not written to the scenario (the kernels include "
          "waiting for peers or compute)",
          l.note.empty() ? "" : "; ", 100 * l.rms_error_after);
      fit.links.push_back(l);
      continue;
    }
    const std::string latency = fmt::format("{:.6g}us", l.hop_latency_after_s * 1e6);
    const std::string efficiency = fmt::format("{:.4g}", l.efficiency_after);
    if (across)
      l.keys = {{"cluster.fabric.efficiency", efficiency}, {"cluster.nic.latency", latency}};
    else
      l.keys = {{"cluster.nvlink.efficiency", efficiency}, {"cluster.nvlink.latency", latency}};
    fit.links.push_back(l);
  }
  return fit;
}

}  // namespace trainsim::kineto
