// Fitting an efficiency profile and the collective constants to traces:
// traces whose kernel times a known profile produced give that profile
// back; the trace writer's text reads back to the same trace.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "platforms/calibrated_defaults.hpp"
#include "platforms/efficiency_profile.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/kineto/collective_fit.hpp"
#include "workloads/kineto/profile_fit.hpp"
#include "workloads/kineto/trace_file.hpp"
#include "workloads/kineto/trace_writer.hpp"

namespace trainsim::kineto {
namespace {

using platforms::EfficiencyProfile;

const KernelClassTable& table() {
  return KernelClassTable::builtin();
}

const platforms::GpuSpec& h100() {
  static const platforms::GpuSpec gpu = *platforms::find_gpu("H100-SXM");
  return gpu;
}

// H100's profile with other peak fractions, knees and host overhead.
EfficiencyProfile producer() {
  EfficiencyProfile p = platforms::efficiency_profile_for("H100-SXM");
  p.name = "producer";
  p.matmul.peak_fraction = 0.62;
  p.matmul.output_elements = knee_curve(p.matmul.output_elements, 2.0e6);
  p.matmul.reduction_depth = knee_curve(p.matmul.reduction_depth, 300);
  p.memory.peak_fraction = 0.55;
  // Points down to 256 bytes, where the small kernels below are.
  std::vector<std::pair<double, double>> bytes;
  for (double x = 256; x <= (1 << 30); x *= 4)
    bytes.emplace_back(x, 1.0);
  p.memory.bytes = knee_curve(platforms::Curve(bytes), 1.5e6);
  p.flash_forward.peak_fraction = 0.45;
  p.flash_backward.peak_fraction = 0.36;
  p.host_overhead_per_kernel_s = 17e-6;
  return p;
}

// A trace of one step whose ops ran the given work, each kernel timed by
// `p` (the per-op cost model, time_op), launched 17 us apart.
class TraceMaker {
 public:
  explicit TraceMaker(EfficiencyProfile p) : p_(std::move(p)) {
    t_.path = "made.json";
    t_.steps.push_back({1, 0, 1e12});
    t_.shapes_recorded = true;
  }
  void gemm(double m, double n, double k) {
    add(CpuOp{.name = "aten::mm",
              .inputs = {{{static_cast<std::int64_t>(m), static_cast<std::int64_t>(k)}},
                         {{static_cast<std::int64_t>(k), static_cast<std::int64_t>(n)}}},
              .types = {"c10::BFloat16", "c10::BFloat16"}},
        "nvjet_tst_128x256", KernelRole::gemm, 1);
  }
  void memory(double elements) {
    add(CpuOp{.name = "aten::add",
              .inputs = {{{static_cast<std::int64_t>(elements)}}},
              .types = {"c10::BFloat16"}},
        "vectorized_elementwise_kernel", KernelRole::memory, 1);
  }
  void attention(bool forward) {
    const Shape q{2, 32, 4096, 128}, kv{2, 8, 4096, 128};
    CpuOp op = forward ? CpuOp{.name = "aten::_scaled_dot_product_flash_attention",
                               .inputs = {{q}, {kv}, {kv}},
                               .types = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"},
                               .concrete = {"", "", "", "0.", "True"}}
                       : CpuOp{.name = "aten::_scaled_dot_product_flash_attention_backward",
                               .inputs = {{q}, {q}, {kv}, {kv}},
                               .types = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16"},
                               .concrete = {"", "", "", "", "", "", "", "", "", "", "0.", "True"}};
    add(op, forward ? "flash_fwd_kernel" : "flash_bwd_kernel", KernelRole::attention, forward ? 1 : 2);
  }
  RankTrace take() { return std::move(t_); }

 private:
  void add(CpuOp op, const std::string& kernel, KernelRole role, int kernels) {
    op.external_id = static_cast<std::int64_t>(t_.ops.size());
    op.thread = 1;
    // Around its launches, as PyTorch's op is.
    op.start_us = launch_us_;
    op.duration_us = kernels * p_.host_overhead_per_kernel_s * 1e6;
    WorkSample s{.work = op_work(op, role), .kernels = kernels};
    const double time = workloads::time_op(op_of(s), h100(), p_).duration_s;
    t_.ops.push_back(op);
    for (int j = 0; j < kernels; ++j) {
      Kernel k;
      k.name = static_cast<std::uint32_t>(t_.names.size());
      t_.names.push_back(kernel);
      k.kernel_class = table().classify(kernel);
      k.start_us = clock_us_;
      k.duration_us = time / kernels * 1e6;
      k.op = static_cast<int>(t_.ops.size()) - 1;
      k.external_id = op.external_id;
      k.step = 0;
      k.stream = 7;
      k.launch = static_cast<int>(t_.launches.size());
      k.correlation = static_cast<std::int64_t>(t_.launches.size());
      t_.launches.push_back({1, launch_us_, 1, k.correlation});
      launch_us_ += p_.host_overhead_per_kernel_s * 1e6;
      clock_us_ += k.duration_us;
      t_.kernels.push_back(k);
    }
  }
  EfficiencyProfile p_;
  RankTrace t_;
  double clock_us_ = 0, launch_us_ = 0;
};

std::vector<RankTrace> made_traces(const EfficiencyProfile& p) {
  TraceMaker m(p);
  for (double tokens : {256.0, 1024.0, 4096.0, 16384.0})
    for (double k : {128.0, 1024.0, 4096.0, 14336.0})
      m.gemm(tokens, 4096, k);
  for (double e : {1e3, 1e4, 1e5, 1e6, 1e7, 1e8})
    m.memory(e);
  m.attention(true);
  m.attention(false);
  return {m.take()};
}

ProfileFit fitted(const std::vector<RankTrace>& traces) {
  return fit_profile(traces, table(), h100(), platforms::efficiency_profile_for("H100-SXM"),
                     {.name = "fitted", .source = "test"});
}

const PartFit& part(const ProfileFit& f, const std::string& name) {
  for (const auto& p : f.parts)
    if (p.part == name)
      return p;
  throw std::logic_error("no part " + name);
}

TEST(ProfileFit, KernelsAProfileTimedGiveThatProfileBack) {
  const EfficiencyProfile truth = producer();
  const ProfileFit f = fitted(made_traces(truth));
  const EfficiencyProfile& q = f.profile;
  EXPECT_NEAR(q.matmul.peak_fraction, truth.matmul.peak_fraction, 0.01 * truth.matmul.peak_fraction);
  EXPECT_NEAR(q.memory.peak_fraction, truth.memory.peak_fraction, 0.01 * truth.memory.peak_fraction);
  EXPECT_NEAR(q.flash_forward.peak_fraction, 0.45, 0.0045);
  EXPECT_NEAR(q.flash_backward.peak_fraction, 0.36, 0.0036);
  EXPECT_NEAR(q.host_overhead_per_kernel_s, 17e-6, 1e-9);
  const auto knee = [&](const std::string& p, const std::string& k) {
    for (const auto& [name, v] : part(f, p).knees)
      if (name == k)
        return v.second;
    return 0.0;
  };
  EXPECT_NEAR(knee("matmul", "output_elements"), 2.0e6, 0.01 * 2.0e6);
  EXPECT_NEAR(knee("matmul", "reduction_depth"), 300, 3);
  EXPECT_NEAR(knee("memory", "bytes"), 1.5e6, 0.01 * 1.5e6);
  // Every part's kernels within 0.1% of their measured times.
  for (const auto& p : f.parts)
    if (p.method == "shapes") {
      EXPECT_LT(p.rms_error_after, 1e-3) << p.part;
      EXPECT_GT(p.rms_error_before, 0.05) << p.part;  // the base profile was off
      EXPECT_NEAR(p.predicted_after_s, p.measured_s, 1e-3 * p.measured_s) << p.part;
    }
  EXPECT_EQ(part(f, "batched_matmul").method, "kept");
  EXPECT_EQ(q.batched_matmul.peak_fraction,
            platforms::efficiency_profile_for("H100-SXM").batched_matmul.peak_fraction);
  for (const auto& c : f.classes)
    EXPECT_LT(c.rms_error, 1e-3) << c.kernel_class;
}

TEST(ProfileFit, OneShapeFitsThePeakFractionAndKeepsTheCurves) {
  TraceMaker m(producer());
  for (int i = 0; i < 5; ++i)
    m.gemm(4096, 4096, 4096);
  const ProfileFit f = fitted({m.take()});
  const auto& base = platforms::efficiency_profile_for("H100-SXM");
  EXPECT_NE(part(f, "matmul").note.find("fewer than 3 distinct values"), std::string::npos);
  ASSERT_EQ(f.profile.matmul.output_elements.points().size(), base.matmul.output_elements.points().size());
  EXPECT_EQ(f.profile.matmul.output_elements.points().back(), base.matmul.output_elements.points().back());
  // The one shape's time is reproduced exactly.
  EXPECT_NEAR(part(f, "matmul").predicted_after_s, part(f, "matmul").measured_s, 1e-9);
}

TEST(ProfileFit, SmallKernelsExtendTheCurveBelowItsFirstPoint) {
  // Kernels of 2 KiB: below the memory curve's first point (16 KiB).
  TraceMaker m(producer());
  for (double e : {256.0, 1024.0, 4096.0, 1e5, 1e6, 1e7})
    m.memory(e);
  const ProfileFit f = fitted({m.take()});
  EXPECT_LT(f.profile.memory.bytes.points().front().first, 2048);
  EXPECT_LT(part(f, "memory").rms_error_after, 1e-3);
}

TEST(ProfileFit, GemmsInFp32AreNotFittedAndSaySo) {
  RankTrace t;
  t.steps.push_back({1, 0, 1e9});
  t.names = {"ampere_sgemm_128x64_nn"};
  t.ops.push_back(CpuOp{.name = "aten::mm", .inputs = {{{64, 64}}, {{64, 64}}}, .types = {"float", "float"}});
  t.kernels.push_back(
      Kernel{.name = 0, .kernel_class = table().find("gemm"), .duration_us = 5, .op = 0, .step = 0});
  const ProfileFit f = fitted({t});
  EXPECT_EQ(part(f, "matmul").method, "kept");
  ASSERT_EQ(f.classes.size(), 1u);
  EXPECT_EQ(f.classes[0].unshaped, 1);
  EXPECT_NEAR(f.classes[0].unshaped_s, 5e-6, 1e-15);
}

TEST(CurveKnee, FindsTheKneeACurveWasSampledWith) {
  const auto& base = platforms::efficiency_profile_for("H100-SXM");
  // h100.yaml says its curves sample x_half 8.8e5 (output), 155 (depth), 4.64e5 (bytes).
  EXPECT_NEAR(curve_knee(base.matmul.output_elements), 8.8e5, 0.03 * 8.8e5);
  EXPECT_NEAR(curve_knee(base.matmul.reduction_depth), 155, 0.03 * 155);
  EXPECT_NEAR(curve_knee(base.memory.bytes), 4.64e5, 0.03 * 4.64e5);
  const auto c = knee_curve(base.memory.bytes, 1e6);
  EXPECT_NEAR(curve_knee(c), 1e6, 0.02e6);
}

TEST(TraceWriter, AWrittenTraceReadsBackAsItWas) {
  RankTrace t = made_traces(producer()).front();
  t.rank = 5;
  t.world_size = 8;
  t.gpu_name = "NVIDIA H100 80GB HBM3";
  t.groups = {{"0", "default_pg", {0, 1, 2, 3, 4, 5, 6, 7}}};
  t.steps = {{3, 0, 5e5}};
  // A collective with PyTorch's metadata.
  t.names.push_back("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)");
  t.collectives.push_back({.collective = "allreduce",
                           .in_elements = 1 << 20,
                           .out_elements = 1 << 20,
                           .dtype = "BFloat16",
                           .group_size = 8,
                           .group_name = "0",
                           .group_ranks = {0, 1, 2, 3, 4, 5, 6, 7},
                           .metadata = true});
  t.kernels.push_back(Kernel{.name = static_cast<std::uint32_t>(t.names.size() - 1),
                             .kernel_class = table().find("nccl_collective"),
                             .device = 0,
                             .stream = 21,
                             .start_us = 10.5,
                             .duration_us = 123.456,
                             .correlation = 99999,
                             .collective = 0,
                             .step = 0});
  std::ostringstream out;
  write_trace(out, t, table());
  const RankTrace r = parse_trace(out.str(), "back.json", 0, table());
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.gpu_name, t.gpu_name);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].number, 3);
  ASSERT_EQ(r.kernels.size(), t.kernels.size());
  // Sorted by start in both; the collective starts at 10.5.
  std::size_t matched = 0;
  for (const auto& k : r.kernels) {
    for (const auto& o : t.kernels)
      if (std::abs(o.start_us - k.start_us) < 1e-3 && t.name_of(o) == r.name_of(k)) {
        EXPECT_NEAR(k.duration_us, o.duration_us, 1e-3);
        EXPECT_EQ(k.kernel_class, o.kernel_class);
        ++matched;
        break;
      }
  }
  EXPECT_EQ(matched, t.kernels.size());
  // The ops and their work came through.
  const auto a = work_samples({t}, table());
  const auto b = work_samples({r}, table());
  ASSERT_EQ(a.size(), b.size());
  double ta = 0, tb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ta += a[i].work.flops + a[i].work.bytes;
    tb += b[i].work.flops + b[i].work.bytes;
  }
  EXPECT_DOUBLE_EQ(ta, tb);
  const auto c =
      std::find_if(r.kernels.begin(), r.kernels.end(), [](const Kernel& k) { return k.collective >= 0; });
  ASSERT_NE(c, r.kernels.end());
  const CollectiveInfo& info = r.collectives[static_cast<std::size_t>(c->collective)];
  EXPECT_EQ(info.collective, "allreduce");
  EXPECT_EQ(info.in_elements, 1 << 20);
  EXPECT_EQ(info.group_ranks.size(), 8u);
  // Refitting the read-back trace gives the same profile.
  EXPECT_NEAR(fitted({r}).profile.matmul.peak_fraction, fitted({t}).profile.matmul.peak_fraction, 1e-4);
}

// NCCL kernels timed by the ring model with known constants.
RankTrace collective_trace(double efficiency, double hop_s, const std::vector<double>& sizes, bool metadata) {
  RankTrace t;
  t.steps.push_back({1, 0, 1e12});
  t.names = {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", "ncclDevKernel_AllGather_RING_LL(x)"};
  for (double s : sizes)
    for (int kind = 0; kind < 2; ++kind) {
      const int n = 8;
      const double f = kind == 0 ? 2.0 * (n - 1) / n : (n - 1.0) / n;
      const double steps = kind == 0 ? 2.0 * (n - 1) : n - 1.0;
      const double bw = 450e9;  // H100's NVLink port per direction
      const double time = 30e-6 + steps * hop_s + s * f / (bw * efficiency);
      CollectiveInfo c{.collective = kind == 0 ? "allreduce" : "allgather",
                       .in_elements = static_cast<std::int64_t>(kind == 0 ? s / 2 : s / 2 / n),
                       .out_elements = static_cast<std::int64_t>(s / 2),
                       .dtype = "BFloat16",
                       .group_size = n,
                       .group_ranks = {0, 1, 2, 3, 4, 5, 6, 7},
                       .metadata = metadata};
      t.collectives.push_back(c);
      // A slower copy first: the fit keeps each kind's fastest.
      for (double slower : {1.5, 1.0})
        t.kernels.push_back(Kernel{.name = static_cast<std::uint32_t>(kind),
                                   .kernel_class = table().find("nccl_collective"),
                                   .duration_us = time * slower * 1e6,
                                   .collective = static_cast<int>(t.collectives.size()) - 1,
                                   .step = 0});
    }
  return t;
}

// One DGX H100 node at the calibrated defaults.
platforms::ClusterSpec h100_cluster() {
  platforms::ClusterSpec c;
  c.groups.push_back(platforms::calibrated_node_group(h100(), 1, platforms::FabricTechnology::infiniband));
  platforms::apply_technology_defaults(c.fabric);
  c.collectives.launch_latency_s = platforms::kLaunchLatency_s;
  return c;
}

TEST(CollectiveFit, NcclKernelsGiveBackTheLinkEfficiencyAndHopLatency) {
  auto cluster = h100_cluster();
  ASSERT_NEAR(cluster.groups.front().nvlink.bandwidth_Bps, 450e9, 1e6);
  cluster.collectives.launch_latency_s = 30e-6;
  const auto fit =
      fit_collectives({collective_trace(0.61, 7e-6, {1e6, 1e7, 1e8, 1e9}, true)}, table(), cluster);
  ASSERT_EQ(fit.links.size(), 2u);
  const LinkFit& nvlink = fit.links[0];
  EXPECT_EQ(nvlink.link, "nvlink");
  EXPECT_EQ(nvlink.samples, 8);
  EXPECT_NEAR(nvlink.efficiency_after, 0.61, 1e-6);
  EXPECT_NEAR(nvlink.hop_latency_after_s, 7e-6, 1e-12);
  EXPECT_LT(nvlink.rms_error_after, 1e-9);
  ASSERT_EQ(nvlink.keys.size(), 2u);
  EXPECT_EQ(nvlink.keys[0].first, "cluster.nvlink.efficiency");
  EXPECT_EQ(nvlink.keys[0].second, "0.61");
  EXPECT_EQ(nvlink.keys[1].second, "7us");
  EXPECT_EQ(fit.links[1].samples, 0);  // nothing across nodes
}

TEST(CollectiveFit, OneSizeKeepsTheHopLatencyAndKernelsWithoutMetadataAreCounted) {
  auto cluster = h100_cluster();
  const auto hop = cluster.groups.front().nvlink.latency_s;
  const auto one = fit_collectives({collective_trace(0.5, hop, {1e9}, true)}, table(), cluster);
  EXPECT_NEAR(one.links[0].hop_latency_after_s, hop, 1e-15);
  EXPECT_NEAR(one.links[0].efficiency_after, 0.5, 1e-3);
  EXPECT_NE(one.links[0].note.find("one message size"), std::string::npos);
  const auto none = fit_collectives({collective_trace(0.5, hop, {1e9}, false)}, table(), cluster);
  EXPECT_EQ(none.links[0].samples, 0);
  ASSERT_EQ(none.notes.size(), 1u);
  EXPECT_NE(none.notes[0].find("4 communication kernels not fitted: no message size"), std::string::npos)
      << none.notes[0];
}

}  // namespace
}  // namespace trainsim::kineto
