#pragma once
// One GPU model: what the cost model and the energy model need to know.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::platforms {

struct EfficiencyProfile;

// Number formats whose peak rate the catalogue records.
enum class DType { fp32, tf32, bf16, fp16, fp8 };
std::string_view to_string(DType dtype);

struct GpuSpec {
  std::string name;
  // Dense (no sparsity) peak rates in FLOP/s; 0 where the GPU has no such unit.
  double peak_fp32_flops = 0;
  double peak_tf32_flops = 0;
  double peak_bf16_flops = 0;  // also fp16
  double peak_fp8_flops = 0;
  // Block-scaled FP8 (MXFP8: a scale per 32 elements) in the tensor cores:
  // Blackwell's, not Hopper's.
  bool mxfp8 = false;
  double hbm_bytes = 0;
  double hbm_bandwidth_Bps = 0;
  // NVLink / Infinity Fabric bandwidth per GPU, per direction (half the
  // datasheet's bidirectional figure).
  double nvlink_bandwidth_Bps = 0;
  // Host interface (PCIe x16) per direction: the path to a NIC, and between
  // GPUs of a node without NVLink.
  double pcie_bandwidth_Bps = 0;
  // Board power by what the GPU does (analysis/gpu_power.hpp): compute
  // kernels bound by the tensor cores draw the board limit (max_power_W),
  // kernels bound by HBM bandwidth draw memory_power_W, NCCL kernels alone
  // (a collective or send with no compute kernel) communication_power_W,
  // and a GPU that the job holds but that runs no kernel (P0, context
  // loaded: pipeline bubbles, waiting for a peer) idle_power_W.
  double idle_power_W = 0;
  double max_power_W = 0;
  double memory_power_W = 0;
  double communication_power_W = 0;
  // Fraction of peak that large training matmuls reach on this GPU: the
  // default compute efficiency of the cost model (calibrated, see docs).
  double matmul_efficiency = 0.7;
  // The efficiency curves of this GPU when the scenario names a file of its
  // own (cluster.gpu.efficiency_profile, e.g. one `trainsim calibrate`
  // fitted); none: the built-in profile its name selects
  // (platforms/efficiency_profile.hpp, efficiency_profile_of).
  std::shared_ptr<const EfficiencyProfile> efficiency_profile = nullptr;

  double peak_flops(DType dtype) const;
  // Power while a compute task runs that spends `memory_bound_fraction` of
  // its time in HBM-bound kernels and the rest in compute-bound ones.
  double compute_power_W(double memory_bound_fraction) const {
    return max_power_W + (memory_power_W - max_power_W) * memory_bound_fraction;
  }
};

// A user-defined GPU without these figures gets them as these fractions of
// its max_power (the H100-SXM's catalogue values over its 700 W).
inline constexpr double kIdlePowerFraction = 0.2;
inline constexpr double kMemoryPowerFraction = 0.7;
inline constexpr double kCommunicationPowerFraction = 0.6;

// The built-in catalogue: datasheet values, sources in gpu_catalogue.cpp.
const std::vector<GpuSpec>& gpu_catalogue();
// Finds a GPU by name or alias, case-insensitively ("A100-80GB",
// "a100-sxm-80gb", "H100", ...).
std::optional<GpuSpec> find_gpu(std::string_view name);
// The names a user may write, for error messages.
std::string gpu_names_for_message();
// Every catalogue name, then every alias (what find_gpu accepts, in any case).
std::vector<std::string_view> gpu_names_and_aliases();

}  // namespace trainsim::platforms
