#include "sim/cli/kineto_export.hpp"

#include <optional>

#include "analysis/kineto/simulated_trace.hpp"
#include "sim/replay/simulation.hpp"
#include "workloads/kineto/trace_writer.hpp"

namespace trainsim::cli {

KinetoExport export_kineto(const scenario::Scenario& scenario, const std::filesystem::path& dir,
                           const std::string& name,
                           const std::function<void(const std::filesystem::path&,
                                                    const std::function<void(std::ostream&)>&)>& write_file) {
  const auto result = sim::simulate(scenario);
  const auto& classes = kineto::KernelClassTable::builtin();
  // Compute tasks as the per-op cost model's kernels, unless the scenario
  // times them otherwise (a flat compute_efficiency, a replayed trace).
  std::optional<kineto::TaskKernels> kernels;
  if (!scenario.workload && !scenario.compute_efficiency)
    kernels.emplace(scenario.model, scenario.plan);
  const auto traces =
      analysis::simulated_traces(result.graph, result.timeline, scenario.cluster, classes,
                                 {.name = name, .gpus = {}, .kernels = kernels ? &*kernels : nullptr});
  KinetoExport out;
  out.iteration_s = result.timeline.end_s;
  for (const auto& t : traces) {
    write_file(dir / t.path, [&](std::ostream& o) { kineto::write_trace(o, t, classes); });
    ++out.files;
    out.kernels += t.kernels.size();
  }
  return out;
}

}  // namespace trainsim::cli
