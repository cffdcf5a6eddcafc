#include <gtest/gtest.h>

#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {
namespace {

TEST(GpuCatalogue, FindsGpusByNameAndAliasCaseInsensitively) {
  ASSERT_TRUE(find_gpu("A100-80GB"));
  EXPECT_EQ(find_gpu("a100-80gb")->name, "A100-SXM-80GB");
  EXPECT_EQ(find_gpu("H100")->name, "H100-SXM");
  EXPECT_FALSE(find_gpu("A200"));
}

TEST(GpuCatalogue, DatasheetPeaksAndMemory) {
  const auto a100 = *find_gpu("A100-SXM-80GB");
  EXPECT_DOUBLE_EQ(a100.peak_flops(DType::bf16), 312e12);
  EXPECT_DOUBLE_EQ(a100.hbm_bandwidth_Bps, 2039e9);
  EXPECT_DOUBLE_EQ(a100.nvlink_bandwidth_Bps, 300e9);  // 600 GB/s bidirectional
  const auto h100 = *find_gpu("H100-SXM");
  EXPECT_DOUBLE_EQ(h100.peak_flops(DType::bf16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.peak_flops(DType::fp8), 1978.9e12);
  EXPECT_DOUBLE_EQ(find_gpu("V100")->peak_flops(DType::fp8), 0);
}

TEST(GpuCatalogue, EveryEntryIsComplete) {
  for (const auto& gpu : gpu_catalogue()) {
    SCOPED_TRACE(gpu.name);
    EXPECT_GT(gpu.peak_bf16_flops, 0);
    EXPECT_GT(gpu.hbm_bytes, 0);
    EXPECT_GT(gpu.hbm_bandwidth_Bps, 0);
    EXPECT_GT(gpu.nvlink_bandwidth_Bps, 0);
    EXPECT_GT(gpu.max_power_W, gpu.idle_power_W);
    EXPECT_GT(gpu.matmul_efficiency, 0);
    EXPECT_LE(gpu.matmul_efficiency, 1);
  }
}

}  // namespace
}  // namespace trainsim::platforms
