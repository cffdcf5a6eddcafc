#include "analysis/report.hpp"

#include <algorithm>

namespace trainsim::analysis {

Report build_report(const RunContext& run, const Timeline& timeline, const Summary* summary,
                    std::optional<RepeatedRuns> repeats, ComputedWithSummary computed) {
  Report r;
  // The GPU and link orbits of a folded run (analysis/fold_classes.hpp),
  // built once for every analysis.
  const auto gpus = GpuClasses::of(run.graph, timeline, static_cast<std::size_t>(run.graph.gpu_count));
  auto links = LinkClasses::of(timeline);
  r.summary = summary ? *summary : summarize(run.graph, timeline, run.model, run.plan, run.cluster, gpus);
  // Utilisation reads each link orbit's flows in the timeline's order; the
  // critical path's link-load index then puts those it reads in order of
  // start. Its pass over the records gives the bubbles their communication
  // intervals too.
  // (The index is built first, as before: built after, its arrays came on
  // top of the heap utilisation's lists had grown, 12 MB more peak RSS.)
  const ExecutionIndex index(run.graph, timeline);
  SharedIntervalLists comm_busy;
  r.utilization = analyze_utilization(run.graph, timeline, gpus, links, &comm_busy);
  r.bubbles = analyze_bubbles(run.graph, timeline, run.plan, index, gpus, computed.nccl_waits, &comm_busy);
  comm_busy = {};
  r.critical_path = critical_path(run.graph, timeline, index, std::move(links));
  r.memory = computed.memory != nullptr ? memory_over_time(*computed.memory, run.cluster)
                                        : memory_over_time(run.graph, timeline, run.cluster, gpus);
  r.energy = computed.activity != nullptr
                 ? analyze_energy(timeline, r.summary, r.bubbles, run.cluster, *computed.activity)
                 : analyze_energy(run.graph, timeline, r.summary, r.bubbles, run.cluster, gpus);
  r.collectives = collective_usage(run.graph, timeline);
  r.repeats = std::move(repeats);
  return r;
}

std::vector<LostTimeCause> top_lost_time_causes(const Report& report) {
  const double gpu_time = report.bubbles.iteration_time_s * static_cast<double>(report.bubbles.gpus.size());
  std::vector<LostTimeCause> out;
  for (BubbleCause c : reported_causes(report.bubbles)) {
    const auto i = static_cast<std::size_t>(c);
    LostTimeCause cause{.cause = c, .gpu_seconds = report.bubbles.total_cause_s[i]};
    if (cause.gpu_seconds <= 0)
      continue;
    cause.fraction = gpu_time > 0 ? cause.gpu_seconds / gpu_time : 0;
    for (const auto& st : report.bubbles.stages) {
      const double f =
          report.bubbles.iteration_time_s > 0 ? st.cause_s[i] / report.bubbles.iteration_time_s : 0;
      if (f > cause.worst_stage_fraction) {
        cause.worst_stage_fraction = f;
        cause.worst_stage = st.stage;
      }
    }
    out.push_back(cause);
  }
  std::stable_sort(out.begin(), out.end(), [](const LostTimeCause& a, const LostTimeCause& b) {
    return a.gpu_seconds > b.gpu_seconds;
  });
  return out;
}

}  // namespace trainsim::analysis
