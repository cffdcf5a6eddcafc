#include <fmt/ostream.h>

#include <ostream>

#include "analysis/reporters.hpp"
#include "platforms/units.hpp"

namespace trainsim::analysis {

void write_terminal_summary(std::ostream& out, const RunContext& run, const Summary& s) {
  const auto& plan = run.plan;
  fmt::print(out, "scenario     {}\n", run.scenario_name);
  fmt::print(out, "cluster      {} GPUs on {} nodes ({})\n", run.cluster.gpu_count(),
             run.cluster.node_count(), run.cluster.groups.front().gpu.name);
  fmt::print(out, "model        {} ({:.2f}B parameters)\n", run.model.name,
             run.model.parameter_count() / 1e9);
  fmt::print(out, "plan         dp {} x tp {} x pp {}, {} micro-batches of {}, schedule {}, recompute {}\n",
             plan.dp, plan.tp, plan.pp, plan.micro_batches(), plan.micro_batch_size, to_string(plan.schedule),
             to_string(plan.recompute));
  std::string options;
  if (plan.cp > 1)
    options += fmt::format(", context parallel {}", plan.cp);
  if (plan.sequence_parallel)
    options += ", sequence parallel";
  if (plan.zero_stage > 0)
    options +=
        plan.zero_stage == 3 ? std::string(", ZeRO-3 (FSDP)") : fmt::format(", ZeRO-{}", plan.zero_stage);
  if (plan.overlap_grad_reduce)
    options += fmt::format(", gradient buckets of {} overlapping the backward",
                           units::format_bytes(plan.grad_bucket_size_bytes()));
  if (!options.empty())
    fmt::print(out, "             {}\n", options.substr(2));
  fmt::print(out, "\n");
  fmt::print(out, "  {:<26}{:>14}\n", "iteration time", units::format_duration(s.iteration_time_s));
  fmt::print(out, "  {:<26}{:>14.4g}\n", "tokens / s", s.tokens_per_s);
  fmt::print(out, "  {:<26}{:>14.1f}\n", "TFLOP/s per GPU", s.tflops_per_gpu);
  fmt::print(out, "  {:<26}{:>13.1f}%\n", "MFU", 100 * s.mfu);
  fmt::print(out, "  {:<26}{:>13.1f}%\n", "HFU", 100 * s.hfu);
  fmt::print(out, "  {:<26}{:>13.1f}%\n", "compute", 100 * s.compute_fraction);
  fmt::print(out, "  {:<26}{:>13.1f}%\n", "exposed communication", 100 * s.exposed_comm_fraction);
  fmt::print(out, "  {:<26}{:>13.1f}%\n", "bubble (idle)", 100 * s.bubble_fraction);
  if (s.peak_memory_gpu >= 0) {
    const auto& g = s.gpus[static_cast<std::size_t>(s.peak_memory_gpu)];
    fmt::print(out, "  {:<26}{:>14}   GPU {} of {}{}\n", "peak memory",
               units::format_bytes(s.peak_memory_bytes), g.gpu, units::format_bytes(g.memory_capacity_bytes),
               s.fits_in_memory ? "" : "  (DOES NOT FIT)");
  }
  fmt::print(out, "\n  {:<8}{:>10}{:>12}{:>10}\n", "stage", "compute", "exposed", "bubble");
  for (const auto& st : s.stages)
    fmt::print(out, "  {:<8}{:>9.1f}%{:>11.1f}%{:>9.1f}%\n", st.stage, 100 * st.compute_fraction,
               100 * st.exposed_comm_fraction, 100 * st.bubble_fraction);
}

}  // namespace trainsim::analysis
