#include "platforms/efficiency_profile.hpp"

#include <gtest/gtest.h>

#include <cmath>

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
