#pragma once
// Writing a RankTrace as a PyTorch profiler trace (Kineto's Chrome-trace
// JSON, as PyTorch 2.x writes it): ProfilerStep spans, CPU ops with their
// recorded shapes, the host launches, kernels with device, stream,
// correlation and External id, NCCL metadata on communication kernels,
// distributedInfo and deviceProperties. read_trace_file reads the text back
// to the same trace (times to the nanosecond, as Kineto writes them), and so
// do Perfetto, chrome://tracing, Holistic Trace Analysis and TensorBoard.
#include <iosfwd>

#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::kineto {

// `classes`: the table the trace's kernel classes index (memcpy and memset
// classes are written with Kineto's gpu_memcpy / gpu_memset categories).
void write_trace(std::ostream& out, const RankTrace& trace, const KernelClassTable& classes);

}  // namespace trainsim::kineto
