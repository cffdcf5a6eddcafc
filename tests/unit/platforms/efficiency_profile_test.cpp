#include "platforms/efficiency_profile.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "platforms/efficiency_profile_writer.hpp"
#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {
namespace {

TEST(EfficiencyCurve, InterpolatesInLog2AndIsFlatOutsideItsPoints) {
  const Curve c({{64, 0.2}, {256, 0.6}, {1024, 1.0}});
  EXPECT_DOUBLE_EQ(c.at(64), 0.2);
  EXPECT_DOUBLE_EQ(c.at(256), 0.6);
  EXPECT_NEAR(c.at(128), 0.4, 1e-12);  // halfway in log2 between 64 and 256
  EXPECT_NEAR(c.at(512), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(c.at(1), 0.2);
  EXPECT_DOUBLE_EQ(c.at(1e9), 1.0);
  EXPECT_DOUBLE_EQ(Curve().at(5), 1.0);
}

TEST(EfficiencyProfiles, EveryBuiltInFileParsesAndEveryCatalogueGpuHasItsOwn) {
  const auto& profiles = builtin_efficiency_profiles();
  ASSERT_GE(profiles.size(), 6u);
  for (const auto& gpu : gpu_catalogue()) {
    SCOPED_TRACE(gpu.name);
    const auto& p = efficiency_profile_for(gpu.name);
    EXPECT_NE(p.name, "generic");
    EXPECT_GT(p.matmul.peak_fraction, 0.3);
    EXPECT_LE(p.matmul.peak_fraction, 0.95);
    EXPECT_GT(p.host_overhead_per_kernel_s, 0);
  }
  EXPECT_EQ(efficiency_profile_for("a100-sxm-80gb").name, "a100");
  EXPECT_EQ(efficiency_profile_for("my-custom-accelerator").name, "generic");
}

TEST(EfficiencyProfiles, SmallShapesAreLessEfficientThanLargeOnes) {
  for (const auto& p : builtin_efficiency_profiles()) {
    SCOPED_TRACE(p.name);
    EXPECT_LT(p.matmul.output_elements.at(128.0 * 128), 0.5 * p.matmul.output_elements.at(8192.0 * 8192));
    EXPECT_LT(p.matmul.reduction_depth.at(64), p.matmul.reduction_depth.at(8192));
    EXPECT_LT(p.memory.bytes.at(64 * 1024), p.memory.bytes.at(1 << 30));
    EXPECT_LT(p.flash_forward.seq_len.at(512), p.flash_forward.seq_len.at(16384));
  }
}

const char* kGood = R"(name: test
gpus: [A100-SXM-80GB]
source: unit test
matmul:
  peak_fraction: 0.8
  output_elements: [[1024, 0.5], [1048576, 1.0]]
  reduction_depth: [[64, 0.5], [4096, 1.0]]
batched_matmul:
  peak_fraction: 0.7
  output_elements: [[1024, 0.5], [1048576, 1.0]]
  reduction_depth: [[64, 0.5], [4096, 1.0]]
flash_attention:
  forward: {peak_fraction: 0.6, seq_len: [[512, 0.5], [8192, 1.0]], head_dim: [[64, 0.8], [128, 1.0]]}
  backward: {peak_fraction: 0.5, seq_len: [[512, 0.5], [8192, 1.0]], head_dim: [[64, 0.8], [128, 1.0]]}
memory:
  peak_fraction: 0.8
  bytes: [[64KiB, 0.1], [64MiB, 1.0]]
host_overhead_per_kernel: 20us
)";

std::string error_of(const std::string& text) {
  try {
    parse_efficiency_profile(text, "eff.yaml");
  } catch (const EfficiencyDataError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(EfficiencyProfiles, ParsesUnitsAndCurves) {
  const auto p = parse_efficiency_profile(kGood, "eff.yaml");
  EXPECT_EQ(p.name, "test");
  EXPECT_DOUBLE_EQ(p.host_overhead_per_kernel_s, 20e-6);
  EXPECT_DOUBLE_EQ(p.memory.bytes.points().front().first, 64 * 1024.0);
  EXPECT_DOUBLE_EQ(p.memory.bytes.points().back().first, 64 * 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(p.flash_backward.peak_fraction, 0.5);
}

TEST(EfficiencyProfiles, BadFilesNameTheLineTheKeyAndWhatWasExpected) {
  auto e = error_of(replaced(kGood, "source: unit test", "source: unit test\ncolour: blue"));
  EXPECT_NE(e.find("eff.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("colour: unknown key"), std::string::npos) << e;

  e = error_of(replaced(kGood, "[[64, 0.5], [4096, 1.0]]", "[[4096, 0.5], [64, 1.0]]"));
  EXPECT_NE(e.find("matmul.reduction_depth"), std::string::npos) << e;
  EXPECT_NE(e.find("sorted"), std::string::npos) << e;

  e = error_of(replaced(kGood, "peak_fraction: 0.8\n  output", "peak_fraction: 1.5\n  output"));
  EXPECT_NE(e.find("matmul.peak_fraction: 1.5 is out of range"), std::string::npos) << e;

  e = error_of(replaced(kGood, "host_overhead_per_kernel: 20us", "host_overhead_per_kernel: 20"));
  EXPECT_NE(e.find("host_overhead_per_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("unit"), std::string::npos) << e;

  e = error_of(replaced(kGood, "[[64KiB, 0.1]", "[[64 kilobytes, 0.1]"));
  EXPECT_NE(e.find("memory.bytes"), std::string::npos) << e;

  e = error_of(replaced(kGood, "batched_matmul:", "batched:"));
  EXPECT_NE(e.find("batched_matmul: missing"), std::string::npos) << e;

  e = error_of(replaced(kGood, "name: test", "name: [a, list]"));
  EXPECT_NE(e.find("eff.yaml:1:"), std::string::npos) << e;

  e = error_of("name: [unclosed");
  EXPECT_NE(e.find("eff.yaml:1:"), std::string::npos) << e;
}

}  // namespace
}  // namespace trainsim::platforms

namespace trainsim::platforms {
namespace {

void expect_same_curve(const Curve& a, const Curve& b) {
  ASSERT_EQ(a.points().size(), b.points().size());
  for (std::size_t i = 0; i < a.points().size(); ++i) {
    EXPECT_NEAR(a.points()[i].first, b.points()[i].first, 1e-5 * a.points()[i].first);
    EXPECT_NEAR(a.points()[i].second, b.points()[i].second, 1e-5 * a.points()[i].second);
  }
}

void expect_same_matmul(const MatmulEfficiency& a, const MatmulEfficiency& b) {
  EXPECT_NEAR(a.peak_fraction, b.peak_fraction, 1e-6);
  expect_same_curve(a.output_elements, b.output_elements);
  expect_same_curve(a.reduction_depth, b.reduction_depth);
}

TEST(EfficiencyProfileWriter, EveryBuiltInProfileReadsBackAsWritten) {
  for (const auto& p : builtin_efficiency_profiles()) {
    SCOPED_TRACE(p.name);
    const std::string text = efficiency_profile_yaml(p, "written by a test\n\nsecond line");
    EXPECT_EQ(text.rfind("# written by a test\n#\n# second line\n", 0), 0u) << text.substr(0, 80);
    const EfficiencyProfile q = parse_efficiency_profile(text, "written.yaml");
    EXPECT_EQ(q.name, p.name);
    EXPECT_EQ(q.gpus, p.gpus);
    EXPECT_EQ(q.source, p.source);
    expect_same_matmul(q.matmul, p.matmul);
    expect_same_matmul(q.batched_matmul, p.batched_matmul);
    ASSERT_EQ(q.matmul_fp8.has_value(), p.matmul_fp8.has_value());
    if (p.matmul_fp8)
      expect_same_matmul(*q.matmul_fp8, *p.matmul_fp8);
    ASSERT_EQ(q.matmul_mxfp8.has_value(), p.matmul_mxfp8.has_value());
    EXPECT_NEAR(q.flash_forward.peak_fraction, p.flash_forward.peak_fraction, 1e-6);
    expect_same_curve(q.flash_backward.seq_len, p.flash_backward.seq_len);
    EXPECT_NEAR(q.memory.peak_fraction, p.memory.peak_fraction, 1e-6);
    expect_same_curve(q.memory.bytes, p.memory.bytes);
    EXPECT_NEAR(q.host_overhead_per_kernel_s, p.host_overhead_per_kernel_s, 1e-11);
  }
}

TEST(EfficiencyProfiles, AGpuNamingItsOwnFileRunsUnderIt) {
  GpuSpec gpu = *find_gpu("H100-SXM");
  EXPECT_EQ(&efficiency_profile_of(gpu), &efficiency_profile_for("H100-SXM"));
  auto own = std::make_shared<EfficiencyProfile>(efficiency_profile_for("H100-SXM"));
  own->name = "mine";
  gpu.efficiency_profile = own;
  EXPECT_EQ(efficiency_profile_of(gpu).name, "mine");
}

}  // namespace
}  // namespace trainsim::platforms
