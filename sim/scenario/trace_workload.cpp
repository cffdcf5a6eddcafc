#include "sim/scenario/trace_workload.hpp"

#include "workloads/chakra/et_file.hpp"

namespace trainsim::scenario {

chakra::ImportedTrace import_trace_workload(const Scenario& scenario) {
  const auto& workload = *scenario.workload;
  std::vector<chakra::RankTrace> ranks;
  for (const auto& file : chakra::find_trace_files(workload.chakra))
    ranks.push_back({file.path.string(), chakra::read_et_file(file.path)});
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
