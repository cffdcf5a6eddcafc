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
    EXPECT_GT(gpu.peak_fp32_flops, 0);
    EXPECT_GT(gpu.peak_bf16_flops, gpu.peak_fp32_flops);
    EXPECT_GT(gpu.pcie_bandwidth_Bps, 0);
    EXPECT_GT(gpu.hbm_bytes, 0);
    EXPECT_GT(gpu.hbm_bandwidth_Bps, 0);
    EXPECT_GT(gpu.nvlink_bandwidth_Bps, 0);
    EXPECT_GT(gpu.max_power_W, gpu.idle_power_W);
    EXPECT_GT(gpu.matmul_efficiency, 0);
    EXPECT_LE(gpu.matmul_efficiency, 1);
  }
}

TEST(GpuCatalogue, EveryPrecisionTheIssueAsksFor) {
  // Dense datasheet peaks: fp32, tf32, bf16, fp8 where the GPU has the unit.
  const auto v100 = *find_gpu("V100-SXM2-32GB");
  EXPECT_DOUBLE_EQ(v100.peak_flops(DType::fp32), 15.7e12);
  EXPECT_DOUBLE_EQ(v100.peak_flops(DType::tf32), 0);  // Volta has no tf32
  const auto a100 = *find_gpu("A100-SXM-40GB");
  EXPECT_DOUBLE_EQ(a100.peak_flops(DType::tf32), 156e12);
  EXPECT_DOUBLE_EQ(a100.peak_flops(DType::fp8), 0);  // Ampere has no fp8
  EXPECT_DOUBLE_EQ(a100.hbm_bandwidth_Bps, 1555e9);
  const auto b200 = *find_gpu("B200");
  EXPECT_DOUBLE_EQ(b200.peak_flops(DType::fp8), 4500e12);
  EXPECT_DOUBLE_EQ(b200.nvlink_bandwidth_Bps, 900e9);  // 1.8 TB/s bidirectional
  EXPECT_DOUBLE_EQ(b200.max_power_W, 1000);
  const auto h200 = *find_gpu("H200");
  EXPECT_DOUBLE_EQ(h200.hbm_bytes, 141e9);
  EXPECT_DOUBLE_EQ(h200.peak_flops(DType::bf16), 989.4e12);
  const auto mi300x = *find_gpu("MI300X");
  EXPECT_DOUBLE_EQ(mi300x.peak_flops(DType::bf16), 1307.4e12);
  EXPECT_DOUBLE_EQ(mi300x.nvlink_bandwidth_Bps, 448e9);  // Infinity Fabric, per direction
  EXPECT_DOUBLE_EQ(mi300x.max_power_W, 750);
  const auto gb200 = *find_gpu("GB200");
  EXPECT_DOUBLE_EQ(gb200.peak_flops(DType::bf16), 2500e12);  // NVL72 table's 5 PF sparse / 2
  EXPECT_DOUBLE_EQ(gb200.hbm_bytes, 186e9);
  EXPECT_DOUBLE_EQ(gb200.max_power_W, 1200);
  EXPECT_TRUE(gb200.mxfp8);  // Blackwell: plan.fp8_recipe: mxfp8 runs on it
  // GB300 (Blackwell Ultra): GB200's dense BF16 / FP8 peaks and HBM bandwidth,
  // 288 GB, up to 1,400 W, PCIe Gen6.
  const auto gb300 = *find_gpu("GB300");
  EXPECT_DOUBLE_EQ(gb300.peak_flops(DType::bf16), gb200.peak_flops(DType::bf16));
  EXPECT_DOUBLE_EQ(gb300.peak_flops(DType::fp8), 5000e12);  // NVL72 table's 720 PF sparse / 72 / 2
  EXPECT_DOUBLE_EQ(gb300.hbm_bytes, 288e9);
  EXPECT_DOUBLE_EQ(gb300.hbm_bandwidth_Bps, gb200.hbm_bandwidth_Bps);
  EXPECT_DOUBLE_EQ(gb300.max_power_W, 1400);
  EXPECT_DOUBLE_EQ(gb300.pcie_bandwidth_Bps, 2 * gb200.pcie_bandwidth_Bps);
  EXPECT_TRUE(gb300.mxfp8);
  EXPECT_FALSE(mi300x.mxfp8);
  // H800: H100's compute and memory, NVLink cut to 400 GB/s (200 per direction).
  const auto h800 = *find_gpu("H800");
  EXPECT_EQ(h800.name, "H800-SXM");
  EXPECT_DOUBLE_EQ(h800.peak_flops(DType::bf16), find_gpu("H100")->peak_flops(DType::bf16));
  EXPECT_DOUBLE_EQ(h800.peak_flops(DType::fp8), find_gpu("H100")->peak_flops(DType::fp8));
  EXPECT_DOUBLE_EQ(h800.hbm_bandwidth_Bps, find_gpu("H100")->hbm_bandwidth_Bps);
  EXPECT_DOUBLE_EQ(h800.nvlink_bandwidth_Bps, 200e9);
  EXPECT_EQ(gpu_catalogue().size(), 10u);
}

}  // namespace
}  // namespace trainsim::platforms
