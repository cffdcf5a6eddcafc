#pragma once
// How close a GPU gets to its datasheet peaks, as a function of the work's
// shape: the data the per-op cost model (workloads/cost_model_per_op) turns
// into kernel times. The curves are data, not code: one YAML file per GPU
// family in platforms/efficiency/, embedded into the binary at build time
// (platforms/CMakeLists.txt), so trainsim needs no data files at run time.
//
//   factor
//    1.0 |                 _________   a Curve: [x, factor] points, linear in
//        |            ____/            log2(x) between points, flat beyond
//        |       ____/                 the first and the last
//        |  ____/
//    0.0 +--------------------------- x (log scale)
//
// A kernel's efficiency is peak_fraction x the product of its curves' factors
// (see docs/calibration.md for how each number was chosen).
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "platforms/gpu_spec.hpp"

namespace trainsim::platforms {

// A bad efficiency file: the message names the file, line, key and what was
// expected.
class EfficiencyDataError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Curve {
 public:
  Curve() = default;
  // Points sorted by x, x > 0, factors in (0, 1].
  explicit Curve(std::vector<std::pair<double, double>> points);
  // 1 for an empty curve.
  double at(double x) const;
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;
};

// Dense matrix products (cuBLAS / hipBLASLt GEMMs on tensor cores). The
// output curve captures wave quantisation and idle SMs on small outputs
// (M x N x batch elements); the depth curve the fixed cost of filling the
// pipeline of a short reduction (K).
struct MatmulEfficiency {
  double peak_fraction = 0;  // of the bf16 dense peak, for large shapes
  Curve output_elements;
  Curve reduction_depth;
};

// A fused attention kernel (FlashAttention-2 style), by sequence length and
// head dimension.
struct AttentionKernelEfficiency {
  double peak_fraction = 0;
  Curve seq_len;
  Curve head_dim;
};

// Memory-bound kernels (element-wise, normalisations, softmax, the optimizer):
// the fraction of HBM bandwidth they reach, by bytes moved per kernel.
struct MemoryEfficiency {
  double peak_fraction = 0;
  Curve bytes;
};

struct EfficiencyProfile {
  std::string name;               // the file's stem, "a100"
  std::vector<std::string> gpus;  // catalogue names it describes
  std::string source;             // provenance, free text
  MatmulEfficiency matmul;
  MatmulEfficiency batched_matmul;  // attention scores and context without a fused kernel
  // The linear GEMMs of FP8 training (workloads/precision.hpp), its
  // peak_fraction of the FP8 dense peak; none for a GPU without FP8 data.
  std::optional<MatmulEfficiency> matmul_fp8;
  // The same GEMMs under MXFP8 block scaling (of the same FP8 peak); a GPU
  // without them times MXFP8 GEMMs with `matmul_fp8`.
  std::optional<MatmulEfficiency> matmul_mxfp8;
  AttentionKernelEfficiency flash_forward;
  AttentionKernelEfficiency flash_backward;
  MemoryEfficiency memory;
  // Host time per kernel launch (framework + CUDA launch). A pass over a
  // layer takes at least kernels x this, which is what bounds small models.
  double host_overhead_per_kernel_s = 0;
};

// Parses one efficiency file. `source_name` names it in error messages.
// Unknown keys, missing keys, bad numbers and unsorted curves are errors.
EfficiencyProfile parse_efficiency_profile(std::string_view yaml_text, const std::string& source_name);

// The built-in profiles (platforms/efficiency/*.yaml), parsed once.
const std::vector<EfficiencyProfile>& builtin_efficiency_profiles();

// The profile whose `gpus` list names `gpu_name` (case-insensitive); the
// "generic" profile when none does.
const EfficiencyProfile& efficiency_profile_for(std::string_view gpu_name);

// The curves a GPU runs under: the file its scenario named
// (GpuSpec::efficiency_profile), else efficiency_profile_for(its name).
const EfficiencyProfile& efficiency_profile_of(const GpuSpec& gpu);

}  // namespace trainsim::platforms
