#pragma once
// One rank's PyTorch profiler trace (Kineto's Chrome trace JSON,
// `*.pt.trace.json[.gz]`) as trainsim reads it: the training steps
// (`ProfilerStep#N` spans), every GPU kernel, memcpy and memset with its
// stream, times and class, the CPU op that launched it (whose recorded input
// shapes give a GEMM's or an attention kernel's shape), the host call that
// launched it, and NCCL's metadata for communication kernels. Times are in
// microseconds from the trace's first recorded event.
//
//   host thread   |--ProfilerStep#5------------------------------------|
//                 aten::mm -> cudaLaunchKernel (correlation 812) ...
//   GPU stream 7                 [sm90_xmma_gemm ...] [flash_fwd ...]  (kernel, correlation 812)
//   GPU stream 21                      [ncclDevKernel_AllReduce ...]   (+ "Collective name", "In msg nelems")
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::kineto {

// A process group of the job (distributedInfo.pg_config).
struct ProcessGroup {
  std::string name{};         // PyTorch's pg_name: "0", "1", ...
  std::string description{};  // pg_desc: "default_pg", ...
  std::vector<int> ranks{};   // global ranks
};

// One training step: the host span PyTorch's profiler records as
// `ProfilerStep#N` (from the call to step() that opened it to the next).
struct Step {
  int number = 0;
  double start_us = 0;
  double end_us = 0;
  double duration_us() const { return end_us - start_us; }
};

// What NCCL's profiling records about a communication kernel (PyTorch 2.1+
// writes it on the kernel, older versions on its `record_param_comms` op);
// what is missing stays unknown.
struct CollectiveInfo {
  // "allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all",
  // "send", "recv", ... as PyTorch names it; from the kernel's name
  // (ncclDevKernel_AllReduce_...) when the trace has no metadata.
  std::string collective{};
  std::int64_t in_elements = -1;  // "In msg nelems"
  std::int64_t out_elements = -1;
  std::string dtype{};  // "Float", "BFloat16", ...
  int group_size = 0;   // 0: unknown
  std::string group_name{};
  std::vector<int> group_ranks{};
  bool metadata = false;  // false: only the kernel's name was there
};

// A tensor's shape as recorded ("Input Dims"); an input is a tensor (one
// shape), a tensor list (several) or a scalar (none).
using Shape = std::vector<std::int64_t>;

// The CPU op a kernel ran for: the innermost op around its host launch (the
// op whose "External id" the kernel carries, in PyTorch 2.x; by nesting in
// time on the launching thread, in older traces): PyTorch's aten op with
// the shapes, types and constant inputs it was called with when the trace
// recorded shapes (record_shapes=True).
struct CpuOp {
  std::string name{};  // "aten::mm", "aten::_flash_attention_forward", ...
  std::int64_t external_id = -1;
  std::int64_t thread = -1;
  double start_us = 0;
  double duration_us = 0;
  std::vector<std::vector<Shape>> inputs{};  // per input
  std::vector<std::string> types{};          // "Input type": "c10::BFloat16", "float", "Scalar", ...
  std::vector<std::string> concrete{};       // "Concrete Inputs": constants as text ("True", "0.1")
};

struct Kernel {
  std::uint32_t name = 0;  // index into RankTrace::names
  int kernel_class = 0;    // index into the KernelClassTable it was read with
  int device = -1;
  std::int64_t stream = -1;
  double start_us = 0;
  double duration_us = 0;
  double end_us() const { return start_us + duration_us; }
  std::int64_t correlation = -1;
  std::int64_t external_id = -1;
  std::array<std::int32_t, 3> grid{};  // 0 when not recorded
  std::array<std::int32_t, 3> block{};
  int op = -1;              // index into RankTrace::ops, or -1
  int collective = -1;      // index into RankTrace::collectives, or -1
  int launch = -1;          // index into RankTrace::launches, or -1
  int step = -1;            // index into RankTrace::steps, or -1 (outside every step)
  std::uint64_t event = 0;  // position in traceEvents, for messages
};

// The host call (cudaLaunchKernel, cuLaunchKernelEx, hipExtModuleLaunchKernel,
// cudaMemcpyAsync, ...) that launched a kernel: what paces a host-bound step.
struct Launch {
  std::int64_t thread = -1;
  double start_us = 0;
  double duration_us = 0;
  std::int64_t correlation = -1;
};

struct RankTrace {
  std::string path{};
  int rank = 0;
  // distributedInfo.rank was there; otherwise `rank` is the file's position
  // among the files given.
  bool rank_recorded = false;
  int world_size = 0;  // 0: unknown
  std::string backend{};
  std::string gpu_name{};  // deviceProperties of the traced GPU ("NVIDIA H100 80GB HBM3")
  double gpu_memory_bytes = 0;
  int gpu_sms = 0;
  bool shapes_recorded = false;  // some CPU op has "Input Dims"
  std::vector<ProcessGroup> groups{};
  std::vector<Step> steps{};  // in time order
  std::vector<std::string> names{};
  std::vector<Kernel> kernels{};  // by start time
  std::vector<Launch> launches{};
  std::vector<CpuOp> ops{};  // those some kernel ran for
  std::vector<CollectiveInfo> collectives{};
  // What the trace lacked and how the reader made do, one sentence each
  // ("no ProfilerStep# spans: ...").
  std::vector<std::string> notes{};

  const std::string& name_of(const Kernel& k) const { return names[k.name]; }
};

}  // namespace trainsim::kineto
