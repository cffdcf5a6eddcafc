#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {
namespace {

constexpr double T = 1e12, GB = 1e9, GiB = 1024.0 * 1024 * 1024;
// communication_power_W as a share of max_power_W (fitted on H100, see above).
constexpr double kCommunicationShareOfMax = kCommunicationPowerFraction;

// Datasheet values, dense (no structured sparsity). NVLink and PCIe figures
// are per direction: half of the bidirectional totals vendors quote.
//
// Power by activity (gpu_spec.hpp; docs/calibration.md, "GPU power"):
// - max_power: the board limit (TDP), what compute-bound kernels draw:
//   GEMM-heavy training phases run at or above TDP (Patel et al., ASPLOS
//   2024: "peak power draw ... often reaches or exceeds their TDP").
// - idle_power: a GPU the job holds but that runs no kernel (P0, clocks up,
//   context loaded): nvidia-smi readings, sources per GPU below (not a
//   datasheet value; +-20% with clocks and temperature).
// - memory_power: HBM-bound kernels. No public per-kernel measurement was
//   found for these GPUs: 70% of the board limit is an assumption (the
//   H100/H200 power-capping study of Ujeniya et al., arXiv 2604.11391,
//   reports memory-bound kernels below compute-bound ones, no figure).
// - communication_power: only NCCL kernels running (a collective or send
//   while no compute kernel runs). NCCL's kernels spin on a few SMs and
//   move data through HBM, NVLink and PCIe, so the GPU reads 100%
//   utilisation (cupy/cupy#3557) and stays in P0. No public wattage was
//   found; the H100-SXM value is fitted to Fernandez et al.'s power per
//   GPU falling 5.9% while throughput per GPU falls 37% from 128 to 2,048
//   H100s (docs/founding_studies.md), the others take the same fraction of
//   their board limit.
std::vector<GpuSpec> build_catalogue() {
  std::vector<GpuSpec> gpus;
  // NVIDIA Tesla V100 datasheet (2020, SXM2): 15.7 TF fp32, 125 TF tensor
  // fp16 (no bf16, no tf32: fp16 stands in for bf16), 32 GB HBM2 at 900 GB/s,
  // NVLink 2 300 GB/s (6 links x 25 GB/s x 2 directions), PCIe Gen3 x16
  // 32 GB/s (bidirectional), 300 W.
  // https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
  gpus.push_back({.name = "V100-SXM2-32GB",
                  .peak_fp32_flops = 15.7 * T,
                  .peak_tf32_flops = 0,
                  .peak_bf16_flops = 125 * T,
                  .peak_fp8_flops = 0,
                  .hbm_bytes = 32 * GiB,
                  .hbm_bandwidth_Bps = 900 * GB,
                  .nvlink_bandwidth_Bps = 150 * GB,
                  .pcie_bandwidth_Bps = 16 * GB,
                  // idle: 53 W in P0 with 20 GB allocated, 0% utilisation
                  // (nvidia-smi in zai-org/GLM-130B#32).
                  .idle_power_W = 53,
                  .max_power_W = 300,
                  .memory_power_W = kMemoryPowerFraction * 300,
                  .communication_power_W = kCommunicationShareOfMax * 300,
                  .matmul_efficiency = 0.65});
  // NVIDIA A100 datasheet (2021, SXM): 19.5 TF fp32, 156 TF tf32, 312 TF
  // bf16 (dense; twice with sparsity), no fp8, 40 GB HBM2 at 1,555 GB/s,
  // NVLink 3 600 GB/s (12 links), PCIe Gen4 64 GB/s (bidirectional), 400 W.
  // https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
  gpus.push_back({.name = "A100-SXM-40GB",
                  .peak_fp32_flops = 19.5 * T,
                  .peak_tf32_flops = 156 * T,
                  .peak_bf16_flops = 312 * T,
                  .peak_fp8_flops = 0,
                  .hbm_bytes = 40 * GiB,
                  .hbm_bandwidth_Bps = 1555 * GB,
                  .nvlink_bandwidth_Bps = 300 * GB,
                  .pcie_bandwidth_Bps = 32 * GB,
                  .idle_power_W = 62,  // as the 80 GB board
                  .max_power_W = 400,
                  .memory_power_W = kMemoryPowerFraction * 400,
                  .communication_power_W = kCommunicationShareOfMax * 400,
                  .matmul_efficiency = 0.7});
  // Same datasheet: 80 GB HBM2e at 2,039 GB/s.
  gpus.push_back({.name = "A100-SXM-80GB",
                  .peak_fp32_flops = 19.5 * T,
                  .peak_tf32_flops = 156 * T,
                  .peak_bf16_flops = 312 * T,
                  .peak_fp8_flops = 0,
                  .hbm_bytes = 80 * GiB,
                  .hbm_bandwidth_Bps = 2039 * GB,
                  .nvlink_bandwidth_Bps = 300 * GB,
                  .pcie_bandwidth_Bps = 32 * GB,
                  // idle: 62 W in P0 at 0% utilisation (an nvidia-smi
                  // reading of an A100-SXM4-80GB, driver 550).
                  .idle_power_W = 62,
                  .max_power_W = 400,
                  .memory_power_W = kMemoryPowerFraction * 400,
                  .communication_power_W = kCommunicationShareOfMax * 400,
                  .matmul_efficiency = 0.7});
  // NVIDIA H100 Tensor Core GPU datasheet (SXM5): 67 TF fp32, 494.7 TF tf32,
  // 989.4 TF bf16, 1,978.9 TF fp8 (dense: half the datasheet's sparsity
  // figures), 80 GB HBM3 at 3.35 TB/s, NVLink 4 900 GB/s (18 links), PCIe
  // Gen5 128 GB/s (bidirectional), up to 700 W.
  // https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet
  gpus.push_back({.name = "H100-SXM",
                  .peak_fp32_flops = 67 * T,
                  .peak_tf32_flops = 494.7 * T,
                  .peak_bf16_flops = 989.4 * T,
                  .peak_fp8_flops = 1978.9 * T,
                  .hbm_bytes = 80 * GiB,
                  .hbm_bandwidth_Bps = 3350 * GB,
                  .nvlink_bandwidth_Bps = 450 * GB,
                  .pcie_bandwidth_Bps = 64 * GB,
                  // idle: 140-145 W in P0 with 72 GB allocated, 0%
                  // utilisation (nvidia-smi in wilicc/gpu-burn#114).
                  .idle_power_W = 140,
                  .max_power_W = 700,
                  .memory_power_W = kMemoryPowerFraction * 700,
                  .communication_power_W = kCommunicationShareOfMax * 700,
                  .matmul_efficiency = 0.6});
  // NVIDIA H800 SXM5 (the H100 for export markets, DeepSeek-V3's GPU):
  // H100-SXM's compute, memory and power; NVLink cut to 400 GB/s (8 links,
  // 200 GB/s per direction; DeepSeek-V3 report, arXiv 2412.19437, Section
  // 3.2.2: "NVLink offers a bandwidth of 160 GB/s" achievable, against IB's
  // 50 GB/s per NIC). https://www.nvidia.com/en-us/data-center/h800/
  gpus.push_back({.name = "H800-SXM",
                  .peak_fp32_flops = 67 * T,
                  .peak_tf32_flops = 494.7 * T,
                  .peak_bf16_flops = 989.4 * T,
                  .peak_fp8_flops = 1978.9 * T,
                  .hbm_bytes = 80 * GiB,
                  .hbm_bandwidth_Bps = 3350 * GB,
                  .nvlink_bandwidth_Bps = 200 * GB,
                  .pcie_bandwidth_Bps = 64 * GB,
                  .idle_power_W = 140,  // as the H100-SXM (same board)
                  .max_power_W = 700,
                  .memory_power_W = kMemoryPowerFraction * 700,
                  .communication_power_W = kCommunicationShareOfMax * 700,
                  .matmul_efficiency = 0.6});
  // NVIDIA H200 datasheet (SXM): H100 compute, 141 GB HBM3e at 4.8 TB/s,
  // NVLink 900 GB/s, PCIe Gen5 128 GB/s (bidirectional), up to 700 W.
  // https://www.nvidia.com/en-us/data-center/h200/
  gpus.push_back({.name = "H200-SXM",
                  .peak_fp32_flops = 67 * T,
                  .peak_tf32_flops = 494.7 * T,
                  .peak_bf16_flops = 989.4 * T,
                  .peak_fp8_flops = 1978.9 * T,
                  .hbm_bytes = 141 * GB,
                  .hbm_bandwidth_Bps = 4800 * GB,
                  .nvlink_bandwidth_Bps = 450 * GB,
                  .pcie_bandwidth_Bps = 64 * GB,
                  .idle_power_W = 140,  // as the H100-SXM (same board power)
                  .max_power_W = 700,
                  .memory_power_W = kMemoryPowerFraction * 700,
                  .communication_power_W = kCommunicationShareOfMax * 700,
                  .matmul_efficiency = 0.62});
  // NVIDIA HGX B200 datasheet (8-GPU board figures / 8, dense = half of
  // sparse): 75 TF fp32, 1.1 PF tf32, 2.25 PF bf16, 4.5 PF fp8, 180 GB
  // HBM3e at 8 TB/s, NVLink 5 at 1.8 TB/s, PCIe Gen5 128 GB/s
  // (bidirectional), 1,000 W. https://www.nvidia.com/en-us/data-center/hgx/
  gpus.push_back({.name = "B200",
                  .peak_fp32_flops = 75 * T,
                  .peak_tf32_flops = 1100 * T,
                  .peak_bf16_flops = 2250 * T,
                  .peak_fp8_flops = 4500 * T,
                  .mxfp8 = true,
                  .hbm_bytes = 180 * GB,
                  .hbm_bandwidth_Bps = 8000 * GB,
                  .nvlink_bandwidth_Bps = 900 * GB,
                  .pcie_bandwidth_Bps = 64 * GB,
                  .idle_power_W = 200,  // the H100's 20% of its board limit (no reading found)
                  .max_power_W = 1000,
                  .memory_power_W = kMemoryPowerFraction * 1000,
                  .communication_power_W = kCommunicationShareOfMax * 1000,
                  .matmul_efficiency = 0.6});
  // The Blackwell GPU of a GB200 superchip (GB200 NVL72 racks): the B200's
  // silicon at a higher power limit and clocks. NVIDIA GB200 NVL72
  // specifications, "Individual Blackwell GPU" column
  // (https://www.nvidia.com/en-us/data-center/gb200-nvl72/; dense = half of
  // the table's sparse figures): 80 TF fp32, 1.25 PF tf32, 2.5 PF bf16,
  // 5 PF fp8, 186 GB HBM3e at 8 TB/s, NVLink 5 at 1.8 TB/s, PCIe Gen5
  // 128 GB/s (bidirectional), configurable up to 1,200 W. The 186 GB also in
  // MLPerf's GB200 NVL72 system descriptions (mlcommons/inference_results_v6.1,
  // Crusoe GB200-NVL72_GB200-186GB). Efficiency curves: the B200's scaled to
  // GB200's published step times (platforms/efficiency/gb200.yaml).
  gpus.push_back({.name = "GB200",
                  .peak_fp32_flops = 80 * T,
                  .peak_tf32_flops = 1250 * T,
                  .peak_bf16_flops = 2500 * T,
                  .peak_fp8_flops = 5000 * T,
                  .mxfp8 = true,  // Blackwell's block-scaled FP8, as the B200
                  .hbm_bytes = 186 * GB,
                  .hbm_bandwidth_Bps = 8000 * GB,
                  .nvlink_bandwidth_Bps = 900 * GB,
                  .pcie_bandwidth_Bps = 64 * GB,
                  .idle_power_W = 240,  // the H100's 20% of its board limit (no reading found)
                  .max_power_W = 1200,
                  .memory_power_W = kMemoryPowerFraction * 1200,
                  .communication_power_W = kCommunicationShareOfMax * 1200,
                  .matmul_efficiency = 0.6});  // as the B200
  // The Blackwell Ultra (B300) GPU of a GB300 superchip (GB300 NVL72 racks).
  // Dense tensor peaks as GB200's: NVIDIA's GB300 NVL72 specifications give
  // the rack 720 PF fp8 and 360 PF bf16 / fp16 with sparsity
  // (https://www.nvidia.com/en-us/data-center/gb300-nvl72/), 5 / 2.5 PF dense
  // per GPU, and 80 TF fp32, 1.25 PF tf32 (GB300 column of Verda's
  // per-GPU table, verda.com/blog/gb300-nvl72-architecture). What Blackwell
  // Ultra adds is FP4 (15 PF dense NVFP4, not modelled), twice the SFU
  // exponential rate for attention's softmax, 160 SMs, 288 GB HBM3e (8
  // stacks of 12-high) at 8 TB/s, NVLink 5 at 1.8 TB/s, PCIe Gen6, up to
  // 1,400 W (NVIDIA technical blog "Inside NVIDIA Blackwell Ultra: The Chip
  // Powering the AI Factory Era", 2025-08). 288 GB is also the system name
  // of MLPerf Inference's NVIDIA submissions (GB300-NVL72_GB300-288GB).
  // PCIe Gen6 x16: 256 GB/s bidirectional. Efficiency curves: GB200's, with
  // the fused attention fitted to GB300's published step times
  // (platforms/efficiency/gb300.yaml).
  gpus.push_back({.name = "GB300",
                  .peak_fp32_flops = 80 * T,
                  .peak_tf32_flops = 1250 * T,
                  .peak_bf16_flops = 2500 * T,
                  .peak_fp8_flops = 5000 * T,
                  .mxfp8 = true,
                  .hbm_bytes = 288 * GB,
                  .hbm_bandwidth_Bps = 8000 * GB,
                  .nvlink_bandwidth_Bps = 900 * GB,
                  .pcie_bandwidth_Bps = 128 * GB,
                  .idle_power_W = 280,  // the H100's 20% of its board limit (no reading found)
                  .max_power_W = 1400,
                  .memory_power_W = kMemoryPowerFraction * 1400,
                  .communication_power_W = kCommunicationShareOfMax * 1400,
                  .matmul_efficiency = 0.6});  // as the B200
  // AMD Instinct MI300X datasheet: 163.4 TF fp32 matrix, 653.7 TF tf32,
  // 1,307.4 TF bf16, 2,614.9 TF fp8 (dense), 192 GB HBM3 at 5.3 TB/s,
  // Infinity Fabric 896 GB/s aggregate (7 links x 128 GB/s, bidirectional),
  // PCIe Gen5 x16 128 GB/s (bidirectional), 750 W.
  // https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf
  gpus.push_back({.name = "MI300X",
                  .peak_fp32_flops = 163.4 * T,
                  .peak_tf32_flops = 653.7 * T,
                  .peak_bf16_flops = 1307.4 * T,
                  .peak_fp8_flops = 2614.9 * T,
                  .hbm_bytes = 192 * GB,
                  .hbm_bandwidth_Bps = 5300 * GB,
                  .nvlink_bandwidth_Bps = 448 * GB,
                  .pcie_bandwidth_Bps = 64 * GB,
                  .idle_power_W = 150,  // the H100's 20% of its board limit (no reading found)
                  .max_power_W = 750,
                  .memory_power_W = kMemoryPowerFraction * 750,
                  .communication_power_W = kCommunicationShareOfMax * 750,
                  .matmul_efficiency = 0.5});
  return gpus;
}

struct Alias {
  std::string_view alias;
  std::string_view name;
};
constexpr std::array<Alias, 13> kAliases{{{"V100", "V100-SXM2-32GB"},
                                          {"V100-32GB", "V100-SXM2-32GB"},
                                          {"A100", "A100-SXM-80GB"},
                                          {"A100-80GB", "A100-SXM-80GB"},
                                          {"A100-40GB", "A100-SXM-40GB"},
                                          {"H100", "H100-SXM"},
                                          {"H100-80GB", "H100-SXM"},
                                          {"H800", "H800-SXM"},
                                          {"H800-80GB", "H800-SXM"},
                                          {"H200", "H200-SXM"},
                                          {"H200-141GB", "H200-SXM"},
                                          {"B200-180GB", "B200"},
                                          {"MI300", "MI300X"}}};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::tf32:
      return "tf32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
  }
  return "?";
}

double GpuSpec::peak_flops(DType dtype) const {
  switch (dtype) {
    case DType::fp32:
      return peak_fp32_flops;
    case DType::tf32:
      return peak_tf32_flops;
    case DType::bf16:
    case DType::fp16:
      return peak_bf16_flops;
    case DType::fp8:
      return peak_fp8_flops;
  }
  return 0;
}

const std::vector<GpuSpec>& gpu_catalogue() {
  static const std::vector<GpuSpec> catalogue = build_catalogue();
  return catalogue;
}

std::optional<GpuSpec> find_gpu(std::string_view name) {
  for (const auto& alias : kAliases)
    if (iequals(alias.alias, name))
      name = alias.name;
  for (const auto& gpu : gpu_catalogue())
    if (iequals(gpu.name, name))
      return gpu;
  return std::nullopt;
}

std::vector<std::string_view> gpu_names_and_aliases() {
  std::vector<std::string_view> names;
  for (const auto& gpu : gpu_catalogue())
    names.push_back(gpu.name);
  for (const auto& alias : kAliases)
    names.push_back(alias.alias);
  return names;
}

std::string gpu_names_for_message() {
  std::string out;
  for (const auto& gpu : gpu_catalogue())
    out += (out.empty() ? "" : ", ") + gpu.name;
  out += " (aliases:";
  for (const auto& alias : kAliases)
    out += fmt::format(" {}", alias.alias);
  return out + ")";
}

}  // namespace trainsim::platforms
