#pragma once
// Fitting a GPU's efficiency profile (platforms/efficiency_profile.hpp) to
// the kernels of measured PyTorch profiler traces: `trainsim calibrate`.
//
// Each CPU op whose kernels are GEMMs, fused attention or HBM-bound work,
// and whose shapes the trace recorded, is a sample: its measured time (all
// its kernels, in the training steps) beside the time trainsim's own per-op
// cost model (workloads/cost_model_per_op, time_op) gives the same work
// under a candidate profile. Each part of the profile is fitted to its
// samples:
//
//   memory          peak_fraction and the knee of its bytes curve
//   matmul,         peak_fraction and the knees of the output-elements and
//   batched_matmul, reduction-depth curves
//   matmul_fp8
//   flash forward / peak_fraction (the sequence and head-dimension curves
//   backward        are kept: a trace rarely varies them)
//   host overhead   the median interval between two kernel launches of one
//                   host thread: the pace of a host-bound step
//
// A curve is the one-parameter family the built-in curves are sampled from,
// factor(x) = 1 / (1 + x_half / x), sampled at the base curve's points,
// more of them at the same spacing where the samples reach beyond (a curve
// is flat beyond its ends), and read, as every curve, linearly in log2(x)
// between them. Under it a kernel takes work / (peak x fraction) plus a
// fixed x_half / (peak x fraction): the family holds a small kernel's fixed
// cost. The knee x_half minimises the squared log error of the samples'
// times, each weighted by its measured time (the kernels that make the step
// time count, not the thousands of tiny ones; a flat objective, shapes far
// from the knee, keeps the base's knee: a tiny pull towards it);
// the peak fraction then makes the part's predicted total time equal the
// measured one (at most 1). A part without samples keeps the base profile's
// values, and says so.
#include <optional>
#include <string>
#include <vector>

#include "platforms/efficiency_profile.hpp"
#include "platforms/gpu_spec.hpp"
#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"
#include "workloads/kineto/op_shapes.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::kineto {

// The kernels one CPU op launched in the training steps, with its work.
struct WorkSample {
  OpWork work;
  int kernel_class = 0;  // of its first kernel
  int rank = 0;
  int kernels = 0;
  double time_s = 0;  // all its kernels
};

// Every op of the traces' steps whose kernels have a role trainsim fits
// (gemm, attention, memory); work.kind none where the shapes say nothing.
std::vector<WorkSample> work_samples(const std::vector<RankTrace>& traces, const KernelClassTable& classes);

// The op trainsim's cost model would time for a sample's work.
workloads::TransformerOp op_of(const WorkSample& s);

// The profile part a sample's work is fitted to: "matmul",
// "batched_matmul", "matmul_fp8", "flash_forward", "flash_backward",
// "memory", or "" (a GEMM in fp32 / tf32 / an unknown type: trainsim trains
// in bf16, fp16 or fp8).
std::string part_of(const OpWork& work);

struct PartFit {
  std::string part;
  std::string method;  // "shapes" (fitted), "kept" (no samples: the base's values)
  int samples = 0;     // ops
  int kernels = 0;
  double measured_s = 0;
  double predicted_before_s = 0;  // under the base profile
  double predicted_after_s = 0;
  double rms_error_before = 0;  // relative error per op, root mean square
  double rms_error_after = 0;
  double peak_fraction_before = 0;
  double peak_fraction_after = 0;
  // Knees of the part's fitted curves, before and after (x_half: output
  // elements, reduction depth or bytes), empty for attention.
  std::vector<std::pair<std::string, std::pair<double, double>>> knees;
  std::string note;
};

// The fit error by kernel class: every sample of the class, predicted
// under the fitted profile.
struct ClassFit {
  std::string kernel_class;
  int samples = 0;
  int kernels = 0;
  double measured_s = 0;
  double predicted_s = 0;  // under the fitted profile
  double rms_error = 0;    // relative error per op
  int unshaped = 0;        // ops of the class without usable shapes (not fitted)
  double unshaped_s = 0;
};

struct HostOverheadFit {
  double before_s = 0;
  double after_s = 0;
  std::size_t intervals = 0;  // launch intervals measured (0: kept)
};

struct ProfileFit {
  platforms::EfficiencyProfile profile;
  std::vector<PartFit> parts;
  std::vector<ClassFit> classes;
  HostOverheadFit host;
  std::vector<std::string> notes;
};

struct ProfileFitOptions {
  std::string name;    // the fitted profile's name
  std::string source;  // its provenance line
};

// Fits `base` (the profile the scenario's GPU runs under) to the traces;
// `gpu` gives the peaks and HBM bandwidth the efficiencies are fractions of.
ProfileFit fit_profile(const std::vector<RankTrace>& traces, const KernelClassTable& classes,
                       const platforms::GpuSpec& gpu, const platforms::EfficiencyProfile& base,
                       const ProfileFitOptions& options);

// The knee x_half of 1 / (1 + x_half / x) closest to a curve (least squares
// in log factor over its points).
double curve_knee(const platforms::Curve& curve);
// That family sampled at the curve's points.
platforms::Curve knee_curve(const platforms::Curve& like, double x_half);

}  // namespace trainsim::kineto
