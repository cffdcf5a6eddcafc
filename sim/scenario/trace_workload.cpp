#include "sim/scenario/trace_workload.hpp"

#include <fmt/format.h>

#include "platforms/input_error.hpp"
#include "platforms/number_format.hpp"
#include "sim/scenario/memory_limits.hpp"
#include "sim/scenario/run_size.hpp"
#include "workloads/chakra/et_file.hpp"

namespace trainsim::scenario {
namespace {

// What one trace node costs through the run: the Node as read (136 bytes),
// its task in the graph and its records (710 bytes a task,
// sim/replay/replay_cost.cpp), rounded up.
constexpr double kBytesPerTraceNode = 1024;

}  // namespace

chakra::ImportedTrace import_trace_workload(const Scenario& scenario) {
  const auto& workload = *scenario.workload;
  std::vector<chakra::RankTrace> ranks;
  // The size guard of a trace: its node count, known only once read, so
  // checked after each rank's file (each at most chakra::kMaxTraceNodes).
  const MemoryLimit limit = process_memory_limit();
  const double limit_bytes = limit.left_bytes;
  double nodes = 0;
  for (const auto& file : chakra::find_trace_files(workload.chakra)) {
    ranks.push_back({file.path.string(), chakra::read_et_file(file.path)});
    nodes += static_cast<double>(ranks.back().trace.nodes.size());
    if (limit_bytes > 0 && nodes * kBytesPerTraceNode > limit_bytes)
      throw platforms::InputError({fmt::format(
          "{}: this trace is too large for this machine: {} ranks read so far hold {:.3g} nodes, about {} "
          "to replay, more than the {} of {}",
          workload.chakra, ranks.size(), nodes, units::format_bytes(nodes * kBytesPerTraceNode),
          units::format_bytes(limit_bytes), limit.from)});
  }
  chakra::ImportOptions options;
  if (!workload.comm_groups.empty())
    options.comm_groups = chakra::read_comm_groups(workload.comm_groups);
  // A node given in FLOPs runs at the GPU's bf16 peak times the matmul
  // efficiency (or the scenario's flat compute_efficiency), and its bytes
  // at the HBM bandwidth: the roofline ASTRA-sim applies.
  for (int gpu = 0; gpu < static_cast<int>(ranks.size()); ++gpu) {
    const auto& spec = scenario.cluster.gpu_of(gpu);
    options.rates.push_back(
        {spec.peak_bf16_flops * scenario.compute_efficiency.value_or(spec.matmul_efficiency),
         spec.hbm_bandwidth_Bps});
  }
  auto imported = chakra::import_trace(ranks, options);
  // GPUs beyond the trace's ranks are part of the cluster, idle.
  imported.graph.gpu_count = scenario.cluster.gpu_count();
  imported.graph.resident_memory.resize(static_cast<std::size_t>(imported.graph.gpu_count));
  return imported;
}

}  // namespace trainsim::scenario
